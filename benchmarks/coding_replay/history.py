# ruff: noqa: E501  (scripted transcript data: long strings are the content)
"""The scripted history of one project ("parcelwise", a parcel-tracking web service), July-November 2026.

Each session is a list of prompts; each prompt a list of steps the scripted model takes (B = a Bash
command with its output and exit code, W = a new file written, E = an edit of an existing file) and
the final answer. ``make_fixtures.py`` plays these through the real Claude Code and Codex CLIs.
The benchmark's queries (queries.jsonl) name memories by phrases that appear here.
"""

from __future__ import annotations

from typing import Any

ROOT = "/home/dev/src/parcelwise"


def B(cmd: str, out: str = "", rc: int = 0, say: str = "", files: dict[str, str] | None = None) -> dict[str, Any]:
    """A command; ``files`` are put in the project first (Claude Code runs grep itself, not from PATH)."""
    return {"kind": "bash", "cmd": cmd, "out": out, "rc": rc, "say": say, "files": files or {}}


def W(path: str, content: str, say: str = "") -> dict[str, Any]:
    return {"kind": "write", "path": path, "content": content, "say": say}


def E(path: str, before: str, old: str, new: str, say: str = "") -> dict[str, Any]:
    return {"kind": "edit", "path": path, "before": before, "old": old, "new": new, "say": say}


def P(prompt: str, steps: list[dict[str, Any]], final: str) -> dict[str, Any]:
    return {"prompt": prompt, "steps": steps, "final": final}


def S(sid: str, at: str, prompts: list[dict[str, Any]], cli: str = "claude") -> dict[str, Any]:
    return {"id": sid, "at": at, "cli": cli, "prompts": prompts}


SESSIONS: list[dict[str, Any]] = [
    S(
        "s01",
        "2026-07-20T09:12:00Z",
        [
            P(
                "Set up the local dev environment for parcelwise: Postgres and Redis in docker compose, FastAPI app on port 8000.",
                [
                    B(
                        "docker compose up -d db redis",
                        " Network parcelwise_default  Created\n Container parcelwise-db-1  Started\n Container parcelwise-redis-1  Started\n",
                        say="Starting the database and Redis containers.",
                    ),
                    W(
                        f"{ROOT}/docker-compose.yml",
                        'services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: parcelwise\n    ports: ["5432:5432"]\n  redis:\n    image: redis:7\n    ports: ["6379:6379"]\n',
                    ),
                ],
                "Local stack is up: Postgres 16 on 5432 and Redis 7 on 6379 from docker-compose.yml. We chose Postgres 16 "
                "(JSONB for carrier payloads) and FastAPI for the API. Run `make dev` to start uvicorn on port 8000.",
            ),
        ],
    ),
    S(
        "s02",
        "2026-07-22T14:03:00Z",
        [
            P(
                "alembic upgrade head fails locally, can you look?",
                [
                    B(
                        "alembic upgrade head",
                        'Traceback (most recent call last):\n  File "/home/dev/src/parcelwise/.venv/bin/alembic", line 8, in <module>\n'
                        'sqlalchemy.exc.OperationalError: (psycopg.OperationalError) could not translate host name "db" to address: '
                        "Name or service not known\n",
                        rc=1,
                        say="Reproducing the migration failure.",
                    ),
                    B(
                        "alembic upgrade head",
                        "INFO  [alembic.runtime.migration] Running upgrade  -> 0001_create_shipments, create shipments table\n",
                        say="Retrying with DATABASE_URL pointing at localhost.",
                    ),
                ],
                "The migration failed because DATABASE_URL in .env used the compose hostname `db`, which only resolves inside "
                "the compose network. For running alembic on the host, .env.local now sets "
                "DATABASE_URL=postgresql+psycopg://postgres:parcelwise@localhost:5432/parcelwise; 0001_create_shipments applied.",
            ),
        ],
    ),
    S(
        "s03",
        "2026-07-24T10:41:00Z",
        [
            P(
                "We need background jobs for generating shipping label PDFs. Set up a task queue.",
                [
                    W(
                        f"{ROOT}/app/worker.py",
                        'from celery import Celery\n\nfrom app.settings import REDIS_URL\n\ncelery_app = Celery("parcelwise", broker=REDIS_URL, backend=REDIS_URL)\n'
                        'celery_app.conf.task_routes = {"app.labels.*": {"queue": "labels"}}\n',
                        say="Creating the Celery app.",
                    ),
                    B(
                        "celery -A app.worker worker -Q labels --loglevel=info",
                        "[2026-07-24 10:44:02,118: INFO/MainProcess] Connected to redis://localhost:6379/0\n"
                        "[2026-07-24 10:44:02,140: INFO/MainProcess] celery@devbox ready.\n",
                    ),
                ],
                'Task queue: Celery with the Redis broker (app/worker.py, `celery_app = Celery("parcelwise", broker=REDIS_URL)`), '
                "label PDF generation routed to the `labels` queue. We picked Celery because the team already knows it from "
                "the previous project. Start a worker with `celery -A app.worker worker -Q labels`.",
            ),
        ],
    ),
    S(
        "s04",
        "2026-07-27T16:20:00Z",
        [
            P(
                "Add login with JWT access tokens for the API.",
                [
                    W(
                        f"{ROOT}/app/auth/tokens.py",
                        'from datetime import timedelta\n\nimport jwt\n\nACCESS_TOKEN_TTL = timedelta(minutes=15)\nALGORITHM = "HS256"\n',
                        say="Token settings first.",
                    ),
                    B(
                        "pytest tests/test_auth.py -q",
                        "......                                                    [100%]\n6 passed in 0.84s\n",
                    ),
                ],
                "POST /auth/login now returns a JWT access token signed with HS256 (pyjwt). Access tokens live 15 minutes "
                "(ACCESS_TOKEN_TTL = timedelta(minutes=15) in app/auth/tokens.py); tests/test_auth.py covers expiry and bad signatures.",
            ),
        ],
    ),
    S(
        "s05",
        "2026-07-29T11:05:00Z",
        [
            P(
                "Set up CI on GitHub Actions: backend tests against a real Postgres, and the frontend build.",
                [
                    W(
                        f"{ROOT}/.github/workflows/ci.yml",
                        "name: ci\non: [push, pull_request]\njobs:\n  backend:\n    runs-on: ubuntu-latest\n    services:\n      postgres:\n"
                        "        image: postgres:16\n        env:\n          POSTGRES_PASSWORD: parcelwise\n  frontend:\n    runs-on: ubuntu-latest\n"
                        "    steps:\n      - uses: actions/setup-node@v4\n        with:\n          node-version: 18\n",
                    ),
                    B(
                        "gh run view 9912034411 --log-failed",
                        "backend  Run pytest  E   psycopg.OperationalError: connection failed: Connection refused\n"
                        'backend  Run pytest  \tIs the server running on host "localhost" (127.0.0.1) and accepting TCP/IP connections on port 5432?\n',
                        rc=0,
                        say="The first run failed, checking the log.",
                    ),
                ],
                "CI is in .github/workflows/ci.yml. The first run failed with `psycopg.OperationalError: connection refused` because "
                "pytest started before the postgres service container was ready. Fixed by adding a health check to the service: "
                "options: --health-cmd pg_isready --health-interval 5s --health-retries 10, so the job waits for the database. "
                "Frontend job builds with node-version: 18.",
            ),
        ],
    ),
    S(
        "s06",
        "2026-07-31T13:30:00Z",
        [
            P(
                "Scaffold the frontend in web/ with Vite, React and TypeScript, plus Tailwind.",
                [
                    B(
                        "npm create vite@latest web -- --template react-ts",
                        "Scaffolding project in /home/dev/src/parcelwise/web...\n\nDone. Now run:\n\n  cd web\n  npm install\n  npm run dev\n",
                    ),
                    B(
                        "npm run build --prefix web",
                        "vite v5.3.4 building for production...\n✓ 34 modules transformed.\ndist/index.html 0.46 kB\n✓ built in 812ms\n",
                    ),
                ],
                "Frontend scaffolded in web/ (Vite + React + TypeScript) with Tailwind configured in web/tailwind.config.js. "
                "`npm run dev --prefix web` serves on 5173 and proxies /api to the FastAPI app on 8000.",
            ),
            P(
                "Also add a make lint target for both sides.",
                [B("make lint", "ruff check app tests\nAll checks passed!\neslint web/src --max-warnings 0\n")],
                "`make lint` runs `ruff check app tests` and `eslint web/src --max-warnings 0`; CI calls the same target so "
                "local and CI linting cannot disagree.",
            ),
        ],
    ),
    S(
        "s07",
        "2026-08-03T09:48:00Z",
        [
            P(
                "Configure the SQLAlchemy engine properly, we're using defaults everywhere.",
                [
                    E(
                        f"{ROOT}/app/db.py",
                        "from sqlalchemy import create_engine\n\nfrom app.settings import DATABASE_URL\n\nengine = create_engine(DATABASE_URL)\n",
                        "engine = create_engine(DATABASE_URL)",
                        "engine = create_engine(DATABASE_URL, pool_size=10, max_overflow=5, pool_pre_ping=True, pool_recycle=1800)",
                        say="Setting the pool options explicitly.",
                    )
                ],
                "app/db.py now creates the engine with pool_size=10, max_overflow=5, pool_pre_ping=True and pool_recycle=1800, "
                "so stale connections after a Postgres restart are detected and at most 15 connections per process are opened.",
            ),
        ],
    ),
    S(
        "s08",
        "2026-08-05T15:12:00Z",
        [
            P(
                "The DHL client keeps failing with 429 Too Many Requests during the morning batch. Make it resilient.",
                [
                    B(
                        "pytest tests/carriers/test_dhl.py -q",
                        "F\nE   httpx.HTTPStatusError: Client error '429 Too Many Requests' for url 'https://api-eu.dhl.com/parcel/de/shipping/v2/orders'\n1 failed in 0.52s\n",
                        rc=1,
                    ),
                    E(
                        f"{ROOT}/app/carriers/dhl.py",
                        'import httpx\n\n\nclass DHLClient:\n    def create_shipment(self, order):\n        return self._post("/orders", order)\n',
                        "    def create_shipment(self, order):",
                        "    @retry(wait=wait_exponential(multiplier=1, max=30), stop=stop_after_attempt(5))\n    def create_shipment(self, order):",
                        say="Adding a tenacity retry around create_shipment.",
                    ),
                ],
                "Added a tenacity retry to DHLClient.create_shipment: @retry(wait=wait_exponential(multiplier=1, max=30), "
                "stop=stop_after_attempt(5)). The morning batch now backs off on 429 and on read timeouts instead of failing.",
            ),
        ],
    ),
    S(
        "s09",
        "2026-08-07T10:15:00Z",
        [
            P(
                "배송 상태 웹훅이 중복으로 들어와서 tracking_events 테이블에 같은 이벤트가 두 번씩 저장돼요. 고쳐 주세요.",
                [
                    B(
                        'psql parcelwise -c "select carrier, event_id, count(*) from tracking_events group by 1,2 having count(*) > 1 limit 3"',
                        " carrier | event_id  | count\n---------+-----------+-------\n cj      | EV8812034 |     2\n dhl     | 7734-AB91 |     2\n(2 rows)\n",
                    ),
                    W(
                        f"{ROOT}/migrations/versions/0007_tracking_events_unique.py",
                        'def upgrade():\n    op.create_unique_constraint("uq_tracking_events_carrier_event_id", "tracking_events", ["carrier", "event_id"])\n',
                    ),
                ],
                "택배사가 같은 웹훅을 재전송해서 중복이 생긴 것이었습니다. 마이그레이션 0007에서 (carrier, event_id)에 유니크 제약 "
                "uq_tracking_events_carrier_event_id 를 추가했고, 웹훅 핸들러는 INSERT ... ON CONFLICT DO NOTHING 으로 바꿔서 재전송된 이벤트는 무시합니다.",
            ),
        ],
    ),
    S(
        "s10",
        "2026-08-10T14:40:00Z",
        [
            P(
                'In the activity feed, show relative times like "3 days ago" instead of raw ISO timestamps.',
                [
                    B("npm install moment --prefix web", "added 1 package, and audited 212 packages in 2s\n"),
                    W(
                        f"{ROOT}/web/src/lib/relativeTime.ts",
                        'import moment from "moment";\n\nexport const relativeTime = (iso: string) => moment(iso).fromNow();\n',
                    ),
                ],
                "ActivityFeed now renders relative times through web/src/lib/relativeTime.ts, which wraps moment's "
                '`moment(iso).fromNow()` ("3 days ago", "a few seconds ago"); the exact timestamp is in the title tooltip.',
            ),
        ],
    ),
    S(
        "s11",
        "2026-08-12T08:55:00Z",
        [
            P(
                "The nightly shipment report shows yesterday's numbers under today's date. Find out why.",
                [
                    B(
                        'grep -n "date.today" app/jobs/nightly_report.py',
                        "5:    report_day = date.today() - timedelta(days=1)\n",
                    ),
                    E(
                        f"{ROOT}/app/jobs/nightly_report.py",
                        "from datetime import date, timedelta\n\n\ndef run():\n    report_day = date.today() - timedelta(days=1)\n",
                        "    report_day = date.today() - timedelta(days=1)",
                        '    report_day = datetime.now(ZoneInfo("Asia/Seoul")).date() - timedelta(days=1)',
                    ),
                ],
                "Off-by-one: the report job runs at 00:30 KST, which is still the previous day in UTC, and the server clock is UTC, "
                "so `date.today()` returned the wrong day. app/jobs/nightly_report.py now computes the report day with "
                'datetime.now(ZoneInfo("Asia/Seoul")).date() because the business day is Korean time.',
            ),
        ],
    ),
    S(
        "s12",
        "2026-08-14T17:02:00Z",
        [
            P(
                "Someone is brute-forcing /auth/login. Add rate limiting.",
                [
                    W(
                        f"{ROOT}/app/auth/limits.py",
                        'from slowapi import Limiter\nfrom slowapi.util import get_remote_address\n\nlimiter = Limiter(key_func=get_remote_address)\nLOGIN_LIMIT = "5/minute"\n',
                    ),
                    B("pytest tests/test_login_limit.py -q", "..\n2 passed in 0.41s\n"),
                ],
                "Login is rate limited with slowapi: 5/minute per client IP (LOGIN_LIMIT in app/auth/limits.py); the sixth "
                "attempt gets HTTP 429 with a Retry-After header.",
            ),
        ],
    ),
    S(
        "s13",
        "2026-08-17T11:25:00Z",
        [
            P(
                "test_label_generation is flaky in CI, about one run in five fails.",
                [
                    B(
                        "pytest tests/test_labels.py::test_label_generation -q --count 20",
                        "....F...............\nE   AssertionError: assert None is not None\nE    +  where None = Shipment(id=881).label_url\n1 failed, 19 passed in 6.10s\n",
                        rc=1,
                    )
                ],
                "The flake came from the test reading label_url before the Celery task finished. The test settings now set "
                "CELERY_TASK_ALWAYS_EAGER=True so tasks run inline in tests; 50 repeated runs pass.",
            ),
        ],
    ),
    S(
        "s14",
        "2026-08-19T10:02:00Z",
        [
            P(
                "CJ대한통운 API 연동해 주세요. 송장번호 형식 검증도 필요해요.",
                [
                    W(
                        f"{ROOT}/app/carriers/cj_logistics.py",
                        'import re\n\nINVOICE_RE = re.compile(r"^\\d{10,12}$")\n\n\nclass CJLogisticsClient:\n    base_url = "https://api.cjlogistics.com/v1"\n',
                    ),
                    B("pytest tests/carriers/test_cj.py -q", "....\n4 passed in 0.37s\n"),
                ],
                "CJ대한통운 클라이언트를 app/carriers/cj_logistics.py 에 추가했습니다. 송장번호는 숫자 10~12자리만 허용합니다 "
                "(INVOICE_RE = ^\\d{10,12}$). 하이픈이 들어간 번호는 저장 전에 제거합니다.",
            ),
        ],
    ),
    S(
        "s15",
        "2026-08-21T15:45:00Z",
        [
            P(
                "Add error monitoring with Sentry for the API and the workers.",
                [
                    W(
                        f"{ROOT}/app/observability.py",
                        'import sentry_sdk\n\nsentry_sdk.init(dsn=os.environ.get("SENTRY_DSN"), traces_sample_rate=0.1, environment=ENV)\n',
                    )
                ],
                "Sentry is initialised in app/observability.py from the SENTRY_DSN env var, with traces_sample_rate=0.1 "
                "(10% of requests traced) and the environment tag; it is a no-op when SENTRY_DSN is unset locally.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s16",
        "2026-08-24T09:30:00Z",
        [
            P(
                "GET /shipments takes over 2 seconds for big orgs. Profile it.",
                [
                    B(
                        'psql parcelwise -c "EXPLAIN ANALYZE SELECT * FROM shipments WHERE org_id = 42 ORDER BY created_at DESC LIMIT 50"',
                        " Limit  (cost=48211.93..48212.06 rows=50)\n   ->  Sort  (actual time=2291.114..2291.120 rows=50 loops=1)\n"
                        "         ->  Seq Scan on shipments  (actual time=0.021..2101.554 rows=812004 loops=1)\n Execution Time: 2291.402 ms\n",
                    ),
                    W(
                        f"{ROOT}/migrations/versions/0012_shipments_org_created_idx.py",
                        'def upgrade():\n    op.create_index("ix_shipments_org_id_created_at", "shipments", ["org_id", "created_at"])\n',
                    ),
                ],
                "The shipments list did a sequential scan over 812k rows and sorted them (2291 ms). Migration 0012 adds the "
                "composite index ix_shipments_org_id_created_at on (org_id, created_at); the same query now takes 3 ms.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s17",
        "2026-08-26T13:10:00Z",
        [
            P(
                "Our Docker image is 1.2 GB, make it smaller.",
                [
                    W(
                        f"{ROOT}/Dockerfile",
                        "FROM python:3.12-slim AS build\nRUN pip wheel --wheel-dir /wheels -r requirements.txt\n\nFROM python:3.12-slim\n"
                        "COPY --from=build /wheels /wheels\nRUN pip install --no-index /wheels/*\n",
                    ),
                    B('docker images parcelwise --format "{{.Tag}} {{.Size}}"', "latest 214MB\n"),
                ],
                "Switched the Dockerfile to a multi-stage build on python:3.12-slim: wheels are built in the first stage and "
                "installed without build tools in the second. The image went from 1.2 GB to 214 MB.",
            ),
        ],
    ),
    S(
        "s18",
        "2026-08-28T18:22:00Z",
        [
            P(
                "The label worker's memory keeps growing until the container gets OOM killed.",
                [
                    B(
                        "docker stats --no-stream parcelwise-worker-1",
                        "CONTAINER ID   NAME                  CPU %     MEM USAGE / LIMIT\n3f1c2a9d0b11   parcelwise-worker-1   12.40%    2.1GiB / 2GiB\n",
                    )
                ],
                "The Celery prefork children leak memory while rendering label PDFs with reportlab (RSS reaches 2.1 GiB). "
                "Workaround for now: worker_max_tasks_per_child=200 so each child is recycled after 200 tasks.",
            ),
        ],
    ),
    S(
        "s19",
        "2026-09-01T10:05:00Z",
        [
            P(
                "Customers got two labels for the same shipment again. What is going on with the label jobs?",
                [
                    B(
                        'grep -c "Task app.labels.render_label\\[8f2c" logs/worker.log',
                        "2\n",
                        files={
                            "logs/worker.log": "[2026-08-31 22:02:11,904: INFO/MainProcess] Task app.labels.render_label[8f2c41d0-9a1e-4b7e-b3f2-2c1d9e0a7f55] received\n"
                            "[2026-08-31 23:02:12,377: INFO/MainProcess] Task app.labels.render_label[8f2c41d0-9a1e-4b7e-b3f2-2c1d9e0a7f55] received\n"
                        },
                    ),
                    B("redis-cli config get notify-keyspace-events", '1) "notify-keyspace-events"\n2) ""\n'),
                ],
                "Root cause: Celery's Redis broker has a visibility_timeout (1 hour here); long label batches that were not acked "
                "in time were delivered again to another worker, so the PDF and the carrier label were created twice. Together "
                "with the prefork memory leak, the decision is to switch the task queue from Celery to RQ: simpler semantics "
                "(one job, one worker, explicit failed-job registry), no visibility timeout, and we only need Redis anyway.",
            ),
        ],
    ),
    S(
        "s20",
        "2026-09-03T09:20:00Z",
        [
            P(
                "Do the migration to RQ now and remove Celery.",
                [
                    W(
                        f"{ROOT}/app/queue.py",
                        "from redis import Redis\nfrom rq import Queue\n\nfrom app.settings import REDIS_URL\n\nredis = Redis.from_url(REDIS_URL)\n"
                        'labels = Queue("labels", connection=redis, default_timeout=600)\n',
                    ),
                    B(
                        "rq worker labels default --url redis://localhost:6379/0",
                        "09:31:12 Worker rq:worker:devbox.4410 started with PID 4410, version 2.0.0\n09:31:12 *** Listening on labels, default...\n",
                    ),
                    B(
                        "pip uninstall -y celery kombu",
                        "Successfully uninstalled celery-5.4.0\nSuccessfully uninstalled kombu-5.4.0\n",
                    ),
                ],
                'Label jobs now run on RQ: app/queue.py defines `labels = Queue("labels", connection=redis, default_timeout=600)`, '
                "jobs are enqueued with labels.enqueue(render_label, shipment_id), and workers start with `rq worker labels default`. "
                "Celery, kombu and app/worker.py are removed; the CELERY_TASK_ALWAYS_EAGER test setting is replaced by Queue(is_async=False).",
            ),
            P(
                "The README still tells people to start the old worker. Update the dev docs.",
                [
                    E(
                        f"{ROOT}/README.md",
                        "## Running locally\n\n    make dev\n    celery -A app.worker worker -Q labels\n",
                        "    celery -A app.worker worker -Q labels",
                        "    rq worker labels default",
                    )
                ],
                'README\'s "Running locally" section now says `rq worker labels default`, and the Flower section is replaced by '
                "rq-dashboard on port 9181 (`rq-dashboard --redis-url $REDIS_URL`).",
            ),
        ],
    ),
    S(
        "s21",
        "2026-09-05T14:12:00Z",
        [
            P(
                "프론트엔드에 한국어 번역 추가해 줘. react-i18next 쓰고, 기본 언어는 browser language 따라가게.",
                [
                    B(
                        "npm install react-i18next i18next i18next-browser-languagedetector --prefix web",
                        "added 3 packages in 3s\n",
                    ),
                    W(
                        f"{ROOT}/web/src/locales/ko.json",
                        '{\n  "shipments.title": "배송 목록",\n  "label.create": "라벨 생성"\n}\n',
                    ),
                ],
                "react-i18next 설정을 web/src/i18n.ts 에 추가했고, LanguageDetector 가 브라우저 언어를 따라갑니다. "
                '번역 파일은 web/src/locales/ko.json 과 en.json 이고, 누락된 키는 영어(fallbackLng: "en")로 표시됩니다.',
            ),
        ],
    ),
    S(
        "s22",
        "2026-09-08T11:40:00Z",
        [
            P(
                "Implement password reset by email.",
                [
                    W(
                        f"{ROOT}/app/auth/reset.py",
                        "from itsdangerous import URLSafeTimedSerializer\n\nRESET_MAX_AGE = 3600  # seconds\n",
                    ),
                    B("pytest tests/test_password_reset.py -q", "....\n4 passed in 0.66s\n"),
                ],
                "Password reset: POST /auth/reset-request emails a link through Postmark (template `password-reset`); the token "
                "is an itsdangerous URLSafeTimedSerializer token valid for one hour (RESET_MAX_AGE = 3600) and single-use.",
            ),
        ],
    ),
    S(
        "s23",
        "2026-09-10T16:05:00Z",
        [
            P(
                "The frontend CI job broke after the Vite upgrade.",
                [
                    B(
                        "gh run view 10234411802 --log-failed",
                        "frontend  Run npm ci  npm warn EBADENGINE Unsupported engine {\n  package: 'vite@6.0.3',\n"
                        "  required: { node: '^18.18.0 || ^20.9.0 || >=22.0.0' },\n  current: { node: 'v18.12.1' }\n}\n"
                        "frontend  Run npm run build  SyntaxError: The requested module 'node:util' does not provide an export named 'styleText'\n",
                    ),
                    E(
                        f"{ROOT}/.github/workflows/ci.yml",
                        "      - uses: actions/setup-node@v4\n        with:\n          node-version: 18\n",
                        "          node-version: 18",
                        "          node-version-file: web/.nvmrc",
                    ),
                ],
                "Vite 6 needs a newer Node than the 18.12 runner image (`styleText` missing from node:util). CI now reads the "
                "Node version from web/.nvmrc, which pins Node 20.18, the same version we use locally.",
            ),
        ],
    ),
    S(
        "s24",
        "2026-09-12T09:50:00Z",
        [
            P(
                "Support ticket: a merchant was charged for two DHL shipments for one order on Wednesday.",
                [
                    B(
                        'grep "POST /parcel/de/shipping/v2/orders" logs/carriers-2026-09-09.log',
                        "09:14:03.118 POST /parcel/de/shipping/v2/orders order=PW-44120 -> ReadTimeout after 30.0s\n"
                        "09:14:34.502 POST /parcel/de/shipping/v2/orders order=PW-44120 -> 201 Created shipmentNo=00340434161094042557\n",
                        files={
                            "logs/carriers-2026-09-09.log": "09:13:58.020 GET /track/shipments?trackingNumber=00340434161094011203 -> 200\n"
                            "09:14:03.118 POST /parcel/de/shipping/v2/orders order=PW-44120 -> ReadTimeout after 30.0s\n"
                            "09:14:34.502 POST /parcel/de/shipping/v2/orders order=PW-44120 -> 201 Created shipmentNo=00340434161094042557\n"
                        },
                    ),
                    B(
                        "git revert --no-edit 5d1e9a2",
                        '[main 8c03f7e] Revert "carriers: retry DHL create_shipment with tenacity"\n 1 file changed, 1 deletion(-)\n',
                    ),
                ],
                "The duplicate came from our own retry: the first POST timed out on our side but DHL had created the shipment, "
                "and the tenacity retry created a second one. I reverted the tenacity retry on create_shipment (commit 8c03f7e). "
                "Instead every create request now sends an Idempotency-Key header derived from our order id, so DHL "
                "returns the original shipment on a repeat; only GET tracking calls are retried now.",
            ),
        ],
    ),
    S(
        "s25",
        "2026-09-15T10:30:00Z",
        [
            P(
                "관리자 대시보드에서 CSV 내보내기 하면 엑셀에서 한글이 다 깨져요.",
                [B("file exports/shipments-2026-09-14.csv", "exports/shipments-2026-09-14.csv: UTF-8 Unicode text\n")],
                '엑셀은 BOM 없는 UTF-8 CSV를 CP949로 읽어서 한글이 깨집니다. 내보내기 응답을 encoding="utf-8-sig" (BOM 포함)로 '
                "바꿨고 Content-Type 은 text/csv; charset=utf-8 입니다. 이제 엑셀에서 바로 열어도 수령인 이름과 주소가 정상으로 보입니다.",
            ),
        ],
    ),
    S(
        "s26",
        "2026-09-17T13:15:00Z",
        [
            P(
                "Warehouse staff get logged out in the middle of scanning. Can we fix the session length?",
                [
                    E(
                        f"{ROOT}/app/auth/tokens.py",
                        'from datetime import timedelta\n\nimport jwt\n\nACCESS_TOKEN_TTL = timedelta(minutes=15)\nALGORITHM = "HS256"\n',
                        "ACCESS_TOKEN_TTL = timedelta(minutes=15)",
                        "ACCESS_TOKEN_TTL = timedelta(minutes=30)\nREFRESH_TOKEN_TTL = timedelta(days=14)",
                    ),
                    B("pytest tests/test_auth.py -q", "........\n8 passed in 0.91s\n"),
                ],
                "Access tokens now live 30 minutes (ACCESS_TOKEN_TTL = timedelta(minutes=30)) and the scanner app silently "
                "refreshes them with a rotating refresh token (REFRESH_TOKEN_TTL 14 days, reuse of an old refresh token revokes the family).",
            ),
        ],
    ),
    S(
        "s27",
        "2026-09-19T15:35:00Z",
        [
            P(
                "Add Playwright end-to-end tests to CI.",
                [
                    B(
                        "npx playwright test",
                        "  1) [chromium] › shipments.spec.ts:5:1 › create shipment\n    Error: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:5173/\n"
                        "  1 failed\n",
                        rc=1,
                    ),
                    W(
                        f"{ROOT}/web/playwright.config.ts",
                        'export default defineConfig({\n  webServer: { command: "npm run preview -- --port 5173", port: 5173, reuseExistingServer: !process.env.CI },\n});\n',
                    ),
                ],
                "E2E tests run with Playwright. They failed with net::ERR_CONNECTION_REFUSED because nothing served the app; "
                "playwright.config.ts now has a webServer entry that starts `npm run preview` on 5173 before the tests.",
            ),
        ],
    ),
    S(
        "s28",
        "2026-09-22T10:10:00Z",
        [
            P(
                "alembic is complaining after I merged main into my branch.",
                [
                    B(
                        "alembic upgrade head",
                        "ERROR [alembic.util.messaging] Multiple head revisions are present for given argument 'head'; please specify "
                        "a specific target revision, '<branchname>@head' to narrow to a specific head, or 'heads' for all heads\n",
                        rc=255,
                    ),
                    B(
                        'alembic merge -m "merge heads" 0018_add_returns 0018_org_settings',
                        "Generating /home/dev/src/parcelwise/migrations/versions/0019_merge_heads.py ...  done\n",
                    ),
                ],
                "Two branches both added a 0018 migration (0018_add_returns and 0018_org_settings), so alembic saw multiple heads. "
                "Created merge revision 0019_merge_heads with `alembic merge`; upgrade head works again. CI now runs "
                "`alembic heads | wc -l` and fails when there is more than one head.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s29",
        "2026-09-24T14:50:00Z",
        [
            P(
                "Label jobs that fail because the carrier is down just disappear into the failed registry. Retry them.",
                [
                    E(
                        f"{ROOT}/app/labels/enqueue.py",
                        "from app.queue import labels\n\n\ndef enqueue_label(shipment_id):\n    return labels.enqueue(render_label, shipment_id)\n",
                        "    return labels.enqueue(render_label, shipment_id)",
                        "    return labels.enqueue(render_label, shipment_id, retry=Retry(max=3, interval=[10, 30, 60]))",
                    ),
                    B(
                        "rq info --url redis://localhost:6379/0",
                        "labels       |████ 4\ndefault      | 0\n2 queues, 4 jobs total\n",
                    ),
                ],
                "Label jobs are enqueued with retry=Retry(max=3, interval=[10, 30, 60]), so a carrier outage gets three "
                "retries after 10, 30 and 60 seconds before the job lands in the FailedJobRegistry; the admin page lists failed jobs.",
            ),
        ],
    ),
    S(
        "s30",
        "2026-09-26T11:00:00Z",
        [
            P(
                "The locust load test at 300 users starts throwing 500s after a minute.",
                [
                    B(
                        "locust -f loadtest/locustfile.py --headless -u 300 -r 20 -t 2m",
                        "sqlalchemy.exc.TimeoutError: QueuePool limit of size 10 overflow 5 reached, connection timed out, timeout 30.00 "
                        "(Background on this error at: https://sqlalche.me/e/20/3o7r)\n",
                        rc=1,
                    ),
                    E(
                        f"{ROOT}/app/db.py",
                        "engine = create_engine(DATABASE_URL, pool_size=10, max_overflow=5, pool_pre_ping=True, pool_recycle=1800)\n",
                        "pool_size=10, max_overflow=5",
                        "pool_size=25, max_overflow=10",
                    ),
                ],
                "The 500s were QueuePool exhaustion. With 4 uvicorn workers and Postgres max_connections=200 we have room, so "
                "the engine now uses pool_size=25, max_overflow=10 (app/db.py). The load test at 300 users passes with p95 180 ms.",
            ),
        ],
    ),
    S(
        "s31",
        "2026-09-29T09:05:00Z",
        [
            P(
                "야간 리포트 메일을 운영팀도 받게 해 주세요. 수신자는 ops@parcelwise.kr 랑 cs@parcelwise.kr 추가.",
                [
                    B(
                        "grep -n REPORT_RECIPIENTS app/settings.py",
                        '3:REPORT_RECIPIENTS = env.list("REPORT_RECIPIENTS", default=["founders@parcelwise.kr"])\n',
                        files={
                            "app/settings.py": 'from environs import env\n\nREPORT_RECIPIENTS = env.list("REPORT_RECIPIENTS", default=["founders@parcelwise.kr"])\n'
                        },
                    )
                ],
                "수신자는 코드가 아니라 환경변수 REPORT_RECIPIENTS 로 관리합니다. fly secrets 에 "
                "REPORT_RECIPIENTS=founders@parcelwise.kr,ops@parcelwise.kr,cs@parcelwise.kr 로 설정했습니다. 다음 야간 리포트부터 세 주소로 발송됩니다.",
            ),
            P(
                "그리고 리포트에 반품 건수도 넣어 주세요.",
                [
                    E(
                        f"{ROOT}/app/jobs/nightly_report.py",
                        'COLUMNS = ["created", "delivered", "failed"]\n',
                        '"failed"]',
                        '"failed", "returned", "return_rate"]',
                    )
                ],
                "리포트에 반품 건수(returned)와 반품률(return_rate) 열을 추가했습니다. returns 테이블의 created_at 기준 전일 건수이고, "
                "반품률은 전일 배송 완료 건 대비 비율입니다.",
            ),
        ],
    ),
    S(
        "s32",
        "2026-10-01T13:45:00Z",
        [
            P(
                "moment is 67 KB of our bundle just for relative times. Replace it.",
                [
                    B(
                        "npm uninstall moment --prefix web && npm install date-fns --prefix web",
                        "removed 1 package\nadded 1 package in 2s\n",
                    ),
                    E(
                        f"{ROOT}/web/src/lib/relativeTime.ts",
                        'import moment from "moment";\n\nexport const relativeTime = (iso: string) => moment(iso).fromNow();\n',
                        'import moment from "moment";\n\nexport const relativeTime = (iso: string) => moment(iso).fromNow();',
                        'import { formatDistanceToNow } from "date-fns";\nimport { ko } from "date-fns/locale";\n\n'
                        'export const relativeTime = (iso: string, lang: string) =>\n  formatDistanceToNow(new Date(iso), { addSuffix: true, locale: lang === "ko" ? ko : undefined });',
                    ),
                ],
                "Relative times now use date-fns `formatDistanceToNow(date, { addSuffix: true })` with the ko locale for Korean "
                'users ("3일 전"); moment is gone and the bundle shrank by 67 KB gzipped-free (61 KB).',
            ),
        ],
    ),
    S(
        "s33",
        "2026-10-03T10:20:00Z",
        [
            P(
                "Merchants' webhook endpoints need a way to verify that our webhooks are really from us.",
                [
                    W(
                        f"{ROOT}/app/webhooks/signing.py",
                        "import hashlib\nimport hmac\n\n\ndef sign(secret: bytes, body: bytes) -> str:\n    return hmac.new(secret, body, hashlib.sha256).hexdigest()\n",
                    )
                ],
                "Outgoing webhooks carry an X-Parcelwise-Signature header: HMAC-SHA256 of the raw body with the merchant's "
                "webhook secret, plus X-Parcelwise-Timestamp; the docs tell receivers to compare with hmac.compare_digest and reject timestamps older than 5 minutes.",
            ),
        ],
    ),
    S(
        "s34",
        "2026-10-06T15:15:00Z",
        [
            P(
                "Store generated label PDFs in S3 instead of the local disk, and give the frontend temporary links.",
                [
                    W(
                        f"{ROOT}/app/labels/storage.py",
                        'def label_url(key: str) -> str:\n    return s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=900)\n',
                    )
                ],
                "Label PDFs go to the S3 bucket parcelwise-labels under labels/{org_id}/{shipment_id}.pdf; the API hands out "
                "presigned GET URLs that expire after 15 minutes (ExpiresIn=900).",
            ),
        ],
    ),
    S(
        "s35",
        "2026-10-08T09:40:00Z",
        [
            P(
                "CI takes 9 minutes, mostly installing dependencies. Speed it up.",
                [
                    E(
                        f"{ROOT}/.github/workflows/ci.yml",
                        '      - uses: actions/setup-python@v5\n        with:\n          python-version: "3.12"\n',
                        '          python-version: "3.12"',
                        '          python-version: "3.12"\n          cache: pip\n          cache-dependency-path: requirements*.txt',
                    )
                ],
                "Enabled the pip cache in actions/setup-python (cache: pip keyed on requirements*.txt) and npm cache in setup-node; "
                "a CI run went from 9 minutes to about 4.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s36",
        "2026-10-10T16:30:00Z",
        [
            P(
                'New events in the activity feed say "in 9 hours" for users in Korea.',
                [
                    B(
                        "curl -s localhost:8000/api/activity?limit=1",
                        '[{"id":9912,"kind":"label_created","created_at":"2026-10-10T16:29:51.204411"}]\n',
                    )
                ],
                "The API sent naive timestamps (no offset), and browsers parse those as local time, so KST users saw events 9 hours "
                "in the future. Serialisation now uses timezone-aware UTC datetimes (datetime.now(timezone.utc)), which render as "
                '"2026-10-10T16:29:51.204411+00:00"; a pydantic validator rejects naive datetimes in responses.',
            ),
        ],
    ),
    S(
        "s37",
        "2026-10-13T10:00:00Z",
        [
            P(
                "주소 정규화 기능 필요해요. 사용자가 입력한 주소를 도로명주소로 바꾸고, Juso API 호출은 캐시해 주세요.",
                [
                    W(
                        f"{ROOT}/app/address/juso.py",
                        'JUSO_URL = "https://business.juso.go.kr/addrlink/addrLinkApi.do"\nCACHE_TTL = 60 * 60 * 24\n',
                    )
                ],
                "app/address/juso.py 가 행정안전부 Juso API로 입력 주소를 도로명주소와 우편번호로 정규화합니다. 같은 주소 조회는 "
                "Redis 에 24시간 캐시합니다 (key: juso:{sha1(address)}). 결과가 여러 개면 사용자가 고르도록 프론트에 후보 목록을 보냅니다.",
            ),
        ],
    ),
    S(
        "s38",
        "2026-10-15T14:25:00Z",
        [
            P(
                "Deploy the app to Fly.io.",
                [
                    B(
                        "fly deploy",
                        "==> Building image\n--> Pushing image done\nRunning parcelwise release_command: alembic upgrade head\n"
                        "  KeyError: 'DATABASE_URL'\nError: release command failed, deployment aborted\n",
                        rc=1,
                    ),
                    B(
                        "fly secrets set DATABASE_URL=postgres://parcelwise@parcelwise-db.flycast:5432/parcelwise",
                        "Secrets are staged for the first deployment\n",
                    ),
                ],
                'Deployed to Fly.io (app parcelwise, region nrt). fly.toml runs release_command = "alembic upgrade head" before each '
                "release; the first deploy aborted with KeyError: 'DATABASE_URL' because the secret was not set yet. After "
                "`fly secrets set DATABASE_URL=...` the deploy succeeded.",
            ),
        ],
    ),
    S(
        "s39",
        "2026-10-17T11:10:00Z",
        [
            P(
                "Bulk label requests time out in production after 30 seconds.",
                [
                    B(
                        "fly logs -a parcelwise --no-tail",
                        "[CRITICAL] WORKER TIMEOUT (pid:412)\n[INFO] Booting worker with pid: 498\n",
                    )
                ],
                "Gunicorn killed the worker at its default 30 s timeout. The process command is now "
                "`gunicorn app.main:app -k uvicorn.workers.UvicornWorker -w 4 --timeout 120`, and bulk label creation over 50 "
                "shipments is moved to an RQ job that the frontend polls.",
            ),
        ],
    ),
    S(
        "s40",
        "2026-10-20T09:35:00Z",
        [
            P(
                'Recipients sometimes get the same "out for delivery" SMS twice.',
                [
                    B(
                        'grep -c "sms.sent shipment=PW-51877 status=out_for_delivery" logs/notify.log',
                        "2\n",
                        files={
                            "logs/notify.log": "14:02:10.511 sms.sent shipment=PW-51877 status=out_for_delivery to=+82-10-****-1142\n"
                            "14:02:13.020 sms.sent shipment=PW-51877 status=out_for_delivery to=+82-10-****-1142\n"
                        },
                    )
                ],
                "Both the DHL webhook and the polling job reported out_for_delivery within seconds. Notifications now take a "
                "Redis lock with SET sms:{shipment_id}:{status} NX EX 600 before sending through Twilio, so the same status "
                "only sends one SMS in 10 minutes.",
            ),
        ],
    ),
    S(
        "s41",
        "2026-10-22T13:20:00Z",
        [
            P(
                "tracking_events has 90 million rows. Add data retention.",
                [W(f"{ROOT}/app/jobs/purge_events.py", "RETENTION = timedelta(days=548)  # 18 months\nBATCH = 5000\n")],
                "New nightly job app/jobs/purge_events.py deletes tracking_events older than 18 months in batches of 5000 rows "
                "(DELETE ... WHERE id IN (SELECT id ... LIMIT 5000)) with a short sleep between batches to keep replication lag low.",
            ),
        ],
    ),
    S(
        "s42",
        "2026-10-24T15:00:00Z",
        [
            P(
                "다크 모드 지원해 주세요. OS 설정 따라가고, 토글도 있으면 좋겠어요.",
                [
                    E(
                        f"{ROOT}/web/tailwind.config.js",
                        'module.exports = {\n  content: ["./src/**/*.tsx"],\n};\n',
                        '  content: ["./src/**/*.tsx"],',
                        '  darkMode: "class",\n  content: ["./src/**/*.tsx"],',
                    )
                ],
                'Tailwind 을 darkMode: "class" 로 바꾸고, 처음에는 prefers-color-scheme 를 따르되 헤더의 토글로 바꾸면 '
                "localStorage 의 theme 값으로 기억합니다. 라벨 미리보기는 다크 모드에서도 흰 배경을 유지합니다.",
            ),
        ],
    ),
    S(
        "s43",
        "2026-10-27T10:45:00Z",
        [
            P(
                "Turn on mypy strict for app/carriers and fix what it finds.",
                [
                    B(
                        "mypy --strict app/carriers",
                        'app/carriers/dhl.py:41: error: Returning Any from function declared to return "Shipment"  [no-any-return]\n'
                        'app/carriers/cj_logistics.py:27: error: Missing type parameters for generic type "dict"  [type-arg]\n'
                        "Found 2 errors in 2 files (checked 6 source files)\n",
                        rc=1,
                    ),
                    B("mypy --strict app/carriers", "Success: no issues found in 6 source files\n"),
                ],
                "mypy --strict now passes for app/carriers (added to the [[tool.mypy.overrides]] in pyproject.toml); fixed a "
                "no-any-return in dhl.py by parsing the response into a pydantic model, and a bare dict in cj_logistics.py.",
            ),
            P(
                "Also run the full test suite.",
                [
                    B(
                        "pytest -q",
                        "........................................................................ [ 17%]\n412 passed, 3 skipped in 38.20s\n",
                    )
                ],
                "Full suite is green after the typing changes: 412 passed, 3 skipped in 38 s.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s44",
        "2026-10-29T09:15:00Z",
        [
            P(
                "How should we schedule the nightly jobs on Fly? rq-scheduler or cron?",
                [
                    B(
                        'fly machine run . --schedule daily --command "python -m app.jobs.nightly_report"',
                        "Machine 3d8d9e1b2c7e89 is scheduled daily\n",
                    )
                ],
                "Decision: no rq-scheduler. Nightly jobs run as scheduled Fly machines (`fly machine run --schedule daily`) so a "
                "missed run does not depend on a long-lived scheduler process; the report runs at 21:00 UTC (06:00 KST) and the "
                "purge job right after it.",
            ),
        ],
    ),
    S(
        "s45",
        "2026-10-31T14:40:00Z",
        [
            P(
                "Run a dependency security audit.",
                [
                    B(
                        "pip-audit -r requirements.txt",
                        "Name   Version ID                  Fix Versions\n------ ------- ------------------- ------------\njinja2 3.1.3   GHSA-h75v-3vvj-5mfj 3.1.4\n"
                        "Found 1 known vulnerability in 1 package\n",
                        rc=1,
                    ),
                    B("pip-audit -r requirements.txt", "No known vulnerabilities found\n"),
                ],
                "pip-audit found GHSA-h75v-3vvj-5mfj in jinja2 3.1.3 (used by the Postmark email templates); bumped jinja2 to "
                "3.1.5 and added a weekly pip-audit job to CI.",
            ),
        ],
    ),
    S(
        "s46",
        "2026-11-03T10:30:00Z",
        [
            P(
                "Merchants want to upload a CSV of 50k shipments at once. Build the bulk import.",
                [
                    W(
                        f"{ROOT}/app/imports/csv_import.py",
                        'async def import_csv(upload):\n    reader = csv.DictReader(io.TextIOWrapper(upload.file, encoding="utf-8-sig"))\n'
                        "    for chunk in batched(reader, 2000):\n        await copy_rows(chunk)\n",
                    ),
                    B("pytest tests/test_csv_import.py -q", "......\n6 passed in 2.41s\n"),
                ],
                "POST /imports/shipments streams the CSV with csv.DictReader, validates each row with pydantic and writes valid "
                "rows in chunks of 2000 with Postgres COPY; 50k rows import in about 11 seconds. Invalid rows come back as an "
                "errors.csv with the line number and reason.",
            ),
        ],
    ),
    S(
        "s47",
        "2026-11-05T11:55:00Z",
        [
            P(
                "토큰 만료되면 로그인 화면에 영어 에러가 나와요. 한국어 메시지로 바꿔 주세요.",
                [
                    E(
                        f"{ROOT}/web/src/locales/ko.json",
                        '{\n  "shipments.title": "배송 목록",\n  "label.create": "라벨 생성"\n}\n',
                        '  "label.create": "라벨 생성"',
                        '  "label.create": "라벨 생성",\n  "auth.sessionExpired": "세션이 만료되었습니다. 다시 로그인해 주세요."',
                    )
                ],
                'API가 401 과 함께 code: "token_expired" 를 보내면 프론트가 auth.sessionExpired 키를 씁니다. 한국어 문구는 '
                '"세션이 만료되었습니다. 다시 로그인해 주세요." 이고 영어는 "Your session has expired. Please sign in again." 입니다.',
            ),
        ],
    ),
    S(
        "s48",
        "2026-11-07T15:10:00Z",
        [
            P(
                "The shipments table freezes the browser when an org has 10k shipments loaded.",
                [B("npm install @tanstack/react-virtual --prefix web", "added 2 packages in 2s\n")],
                "ShipmentsTable now virtualises rows with @tanstack/react-virtual (useVirtualizer, estimateSize 44 px, overscan 10): "
                "only the visible ~30 rows are in the DOM, so 10k rows scroll smoothly.",
            ),
        ],
    ),
    S(
        "s49",
        "2026-11-09T10:05:00Z",
        [
            P(
                "We need a NOT NULL weight_grams column on shipments without downtime.",
                [
                    W(
                        f"{ROOT}/migrations/versions/0030_shipments_weight_nullable.py",
                        'def upgrade():\n    op.add_column("shipments", sa.Column("weight_grams", sa.Integer(), nullable=True))\n',
                    ),
                    W(
                        f"{ROOT}/migrations/versions/0031_shipments_weight_not_null.py",
                        'def upgrade():\n    op.alter_column("shipments", "weight_grams", nullable=False)\n',
                    ),
                ],
                "Three steps so no deploy locks the table: 0030 adds weight_grams as nullable, a backfill job fills it from the "
                "carrier payloads in batches, then 0031 sets NOT NULL after the backfill finished. Never add a NOT NULL column "
                "with a default in one migration on the 90M-row tables.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s50",
        "2026-11-11T17:20:00Z",
        [
            P(
                "CI is red on main, the e2e job.",
                [
                    B(
                        "gh run view 11873340021 --log-failed",
                        "e2e  Run npx playwright test  1) [chromium] › labels.spec.ts:18:3 › creates a label\n"
                        "e2e    Error: Timed out 5000ms waiting for expect(locator).toBeVisible()\n    Locator: getByText('Label created')\n",
                    )
                ],
                'Flaky e2e test: the "Label created" toast appears only after the RQ job finishes, which takes longer than 5 s on '
                "the CI runners. The test now waits for the job status endpoint and uses toBeVisible({ timeout: 15000 }); "
                "it is not a database problem this time.",
            ),
            P(
                "Unrelated: the CI image's Playwright browsers are out of date, bump them.",
                [B("npx playwright --version", "Version 1.49.1\n")],
                "Bumped @playwright/test to 1.49.1; the e2e job runs `npx playwright install --with-deps chromium` and caches "
                "~/.cache/ms-playwright keyed on the Playwright version, so browsers are only downloaded when it changes.",
            ),
        ],
    ),
    S(
        "s51",
        "2026-11-13T13:30:00Z",
        [
            P(
                "Generate TypeScript types for the frontend from our OpenAPI schema instead of writing them by hand.",
                [
                    B(
                        "npx openapi-typescript http://localhost:8000/openapi.json -o web/src/api/schema.d.ts",
                        "✨ openapi-typescript 7.4.1\n🚀 http://localhost:8000/openapi.json → web/src/api/schema.d.ts [212ms]\n",
                    )
                ],
                "Types are generated with openapi-typescript into web/src/api/schema.d.ts (`npm run gen:api`); CI regenerates "
                "them and fails if git diff is not empty, so the frontend cannot drift from the API.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s52",
        "2026-11-14T10:40:00Z",
        [
            P(
                "배송 추적 페이지에 지도 넣어 주세요. 현재 위치랑 배송 경로 표시.",
                [
                    W(
                        f"{ROOT}/web/src/components/TrackingMap.tsx",
                        "export function TrackingMap({ points }: Props) {\n  // Kakao Maps JS SDK, loaded with autoload=false\n}\n",
                    )
                ],
                "TrackingMap 컴포넌트가 카카오맵 JS SDK로 배송 경로를 폴리라인으로 그리고 마지막 스캔 위치에 마커를 둡니다. "
                "앱 키는 VITE_KAKAO_MAP_KEY 환경변수이고, 도메인은 카카오 개발자 콘솔에 parcelwise.kr 로 등록했습니다.",
            ),
        ],
    ),
    S(
        "s53",
        "2026-11-16T09:25:00Z",
        [
            P(
                "Some RQ jobs vanish without ever running or failing.",
                [
                    B(
                        'redis-cli info memory | grep -E "used_memory_human|maxmemory_policy"',
                        "used_memory_human:1.93G\nmaxmemory_policy:allkeys-lru\n",
                    ),
                    B("redis-cli info stats | grep evicted_keys", "evicted_keys:18231\n"),
                ],
                "Redis was full and maxmemory-policy allkeys-lru evicted RQ job hashes (18231 evicted keys). The queue Redis "
                "now uses maxmemory-policy noeviction, and the Juso address cache moved to a separate Redis database with its own LRU instance.",
            ),
        ],
    ),
    S(
        "s54",
        "2026-11-17T14:05:00Z",
        [
            P(
                "Make the API logs structured so we can search them by request.",
                [
                    W(
                        f"{ROOT}/app/logging.py",
                        "structlog.configure(processors=[structlog.contextvars.merge_contextvars, structlog.processors.JSONRenderer()])\n",
                    )
                ],
                "Logs are JSON via structlog; a middleware binds request_id (from X-Request-ID or a new uuid4), org_id and route "
                "to the context vars, and the request_id is also returned in the X-Request-ID response header.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s55",
        "2026-11-18T11:15:00Z",
        [
            P(
                "Sentry is flooded with CancelledError events from clients disconnecting.",
                [
                    E(
                        f"{ROOT}/app/observability.py",
                        'sentry_sdk.init(dsn=os.environ.get("SENTRY_DSN"), traces_sample_rate=0.1, environment=ENV)\n',
                        "environment=ENV)",
                        "environment=ENV, ignore_errors=[asyncio.CancelledError, ClientDisconnect])",
                    )
                ],
                "Added ignore_errors=[asyncio.CancelledError, ClientDisconnect] to sentry_sdk.init: they are clients closing the "
                "connection, not bugs. Sentry event volume dropped from ~4k to ~150 a day.",
            ),
        ],
    ),
    S(
        "s56",
        "2026-11-19T10:50:00Z",
        [
            P(
                "Add a /healthz endpoint for Fly health checks that checks Postgres and Redis.",
                [
                    W(
                        f"{ROOT}/app/health.py",
                        '@router.get("/healthz")\ndef healthz():\n    db.execute(text("SELECT 1"))\n    redis.ping()\n    return {"ok": True}\n',
                    ),
                    B("curl -s localhost:8000/healthz", '{"ok":true}\n'),
                ],
                "GET /healthz runs SELECT 1 and a Redis PING and returns 503 if either fails; fly.toml's [[http_service.checks]] "
                "polls it every 15 s with a 5 s timeout.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s57",
        "2026-11-20T09:30:00Z",
        [
            P(
                "관리자 권한을 나눠야 해요. admin, operator, viewer 세 가지 역할로 RBAC 만들어 주세요.",
                [
                    W(
                        f"{ROOT}/app/auth/roles.py",
                        'class Role(StrEnum):\n    ADMIN = "admin"\n    OPERATOR = "operator"\n    VIEWER = "viewer"\n',
                    )
                ],
                "역할은 admin, operator, viewer 세 가지입니다. require_role(Role.OPERATOR) 의존성으로 라우트를 보호하고, viewer 는 "
                "조회만, operator 는 배송 생성·라벨 출력, admin 은 멤버 초대와 결제 설정까지 가능합니다. 기존 사용자는 마이그레이션 0033에서 admin 으로 채웠습니다.",
            ),
        ],
    ),
    S(
        "s58",
        "2026-11-21T15:40:00Z",
        [
            P(
                "Add Python 3.13 to the CI matrix.",
                [
                    B(
                        "gh run view 12011220378 --log-failed",
                        "backend (3.13)  Run pip install -r requirements.txt\n  error: failed-wheel-build-for-install\n"
                        "  × Failed to build installable wheels for some pyproject.toml based projects\n  ╰─> reportlab\n",
                    )
                ],
                "Python 3.13 fails in CI only because reportlab 4.0.9 has no 3.13 wheel and needs a C compiler to build; bumped "
                "reportlab to 4.2.5 which ships cp313 wheels. The matrix is now 3.12 and 3.13.",
            ),
        ],
    ),
    S(
        "s59",
        "2026-11-22T10:20:00Z",
        [
            P(
                "The weekly invoice PDF shows amounts like 12345.5 — format them as money.",
                [
                    E(
                        f"{ROOT}/app/billing/invoice.py",
                        "def fmt_amount(value):\n    return str(value)\n",
                        "    return str(value)",
                        '    return format_currency(value, "KRW", locale="ko_KR")',
                    )
                ],
                'Invoice amounts are formatted with babel\'s format_currency(value, "KRW", locale="ko_KR") (₩12,346, no decimals '
                "for won); the USD invoices of overseas merchants use locale en_US.",
            ),
        ],
    ),
    S(
        "s60",
        "2026-11-22T16:10:00Z",
        [
            P(
                "The CJ webhook endpoint started returning 500 for some tracking events.",
                [
                    B(
                        "pytest tests/webhooks/test_cj_webhook.py -q",
                        "F\n=================================== FAILURES ===================================\n"
                        "Traceback (most recent call last):\n"
                        '  File "/home/dev/src/parcelwise/app/webhooks/cj.py", line 23, in handle_event\n'
                        '    event_id = int(payload["eventId"])\n'
                        "ValueError: invalid literal for int() with base 10: 'EV8812034'\n"
                        "1 failed in 0.44s\n",
                        rc=1,
                    ),
                    E(
                        f"{ROOT}/app/webhooks/cj.py",
                        'def handle_event(payload):\n    event_id = int(payload["eventId"])\n',
                        '    event_id = int(payload["eventId"])',
                        '    event_id = str(payload["eventId"])',
                    ),
                ],
                "CJ started sending event ids with an EV prefix (EV8812034) and the webhook parsed them with int(). The handler "
                "now keeps eventId as a string, and tracking_events.event_id was already text, so no migration was needed; "
                "the dedupe constraint still applies.",
            ),
        ],
        cli="codex",
    ),
    S(
        "s61",
        "2026-11-23T09:05:00Z",
        [
            P(
                "Label jobs fail for some shipments, here is what the worker logs show.",
                [
                    B(
                        "fly logs -a parcelwise-worker --no-tail",
                        "2026-11-23T00:01:12Z app[worker] Traceback (most recent call last):\n"
                        '2026-11-23T00:01:12Z app[worker]   File "/app/app/labels/render.py", line 44, in render_label\n'
                        '2026-11-23T00:01:12Z app[worker]     canvas.setFont("NanumGothic", 11)\n'
                        "2026-11-23T00:01:12Z app[worker] KeyError: 'NanumGothic'\n",
                    ),
                    W(
                        f"{ROOT}/app/labels/fonts.py",
                        "from reportlab.pdfbase import pdfmetrics\nfrom reportlab.pdfbase.ttfonts import TTFont\n\n"
                        'pdfmetrics.registerFont(TTFont("NanumGothic", "assets/fonts/NanumGothic.ttf"))\n',
                    ),
                ],
                "Labels for recipients with Korean names failed: render_label switches to the NanumGothic font for Hangul, but "
                "the font was never registered with reportlab in the worker image. app/labels/fonts.py now registers "
                "assets/fonts/NanumGothic.ttf at import, and the Dockerfile copies assets/fonts into the image.",
            ),
        ],
    ),
]
