"""Write queries.jsonl: the replay's questions, each with its expected memory (markers) or none.

A marker is a phrase the expected event's content must contain; ``{"session": "s07", "text": ...}`` limits it
to one session of history.py (the runner maps ids to the recorded session ids). ``stale`` names the superseded
answer of a knowledge update, which must not be injected. ``split`` is assigned per category: in each
category two of every five queries go to dev, the rest to test.
"""

from __future__ import annotations

import json
from pathlib import Path

M = "match"

# (category, lang, query, expect markers, stale markers)
QUERIES: list[tuple[str, str, str, list, list]] = [
    # ---- knowledge updates: the current answer, never the superseded one --------------------------------
    (
        "update",
        "en",
        "Which task queue do we use for the label PDF jobs?",
        ["Label jobs now run on RQ", "switch the task queue from Celery to RQ"],
        [{"session": "s03", "text": "Celery"}],
    ),
    (
        "update",
        "en",
        "How do I start the label worker locally?",
        ["rq worker labels default"],
        [{"session": "s03", "text": "celery -A app.worker worker"}],
    ),
    (
        "update",
        "en",
        "What pool_size is the SQLAlchemy engine configured with?",
        ["pool_size=25"],
        [{"session": "s07", "text": "pool_size=10"}],
    ),
    (
        "update",
        "en",
        "How many Postgres connections can one API process open at most?",
        ["pool_size=25, max_overflow=10"],
        [{"session": "s07", "text": "max_overflow=5"}],
    ),
    (
        "update",
        "en",
        "How long is a JWT access token valid?",
        ["Access tokens now live 30 minutes"],
        [{"session": "s04", "text": "15 minutes"}, {"session": "s04", "text": "minutes=15"}],
    ),
    (
        "update",
        "en",
        "Do we retry the DHL create_shipment call when it times out?",
        ["reverted the tenacity retry", "Idempotency-Key"],
        [{"session": "s08", "text": "tenacity"}],
    ),
    (
        "update",
        "en",
        "Is there still a tenacity @retry decorator on the carrier client?",
        ["reverted the tenacity retry"],
        [{"session": "s08", "text": "@retry"}],
    ),
    (
        "update",
        "en",
        "Which library formats the relative times in the activity feed?",
        ["formatDistanceToNow"],
        [{"session": "s10", "text": "fromNow"}],
    ),
    (
        "update",
        "en",
        "Which Node version does the frontend CI job run on?",
        ["node-version-file: web/.nvmrc", "pins Node 20.18"],
        [{"session": "s05", "text": "node-version: 18"}],
    ),
    (
        "update",
        "ko",
        "라벨 생성 작업 큐는 지금 뭘 쓰고 있어요?",
        ["Label jobs now run on RQ", "switch the task queue from Celery to RQ"],
        [{"session": "s03", "text": "Celery"}],
    ),
    (
        "update",
        "ko",
        "DB 커넥션 풀 크기 지금 몇으로 되어 있어?",
        ["pool_size=25"],
        [{"session": "s07", "text": "pool_size=10"}],
    ),
    (
        "update",
        "en",
        "What's the access token TTL after the warehouse logout complaints?",
        ["ACCESS_TOKEN_TTL = timedelta(minutes=30)"],
        [{"session": "s04", "text": "minutes=15"}],
    ),
    # ---- code and time-looking text ---------------------------------------------------------------------
    (
        "timecode",
        "en",
        "`date.today()` in the nightly report is off by one day again",
        ['datetime.now(ZoneInfo("Asia/Seoul")).date()'],
        [],
    ),
    (
        "timecode",
        "en",
        "render '3 days ago' style timestamps in the activity feed",
        ["formatDistanceToNow"],
        [{"session": "s10", "text": "fromNow"}],
    ),
    ("timecode", "en", "CI failed again this week, the database wasn't ready", ["pg_isready"], []),
    (
        "timecode",
        "en",
        'The activity feed says "in 9 hours" for brand-new events again',
        ["timezone-aware UTC datetimes"],
        [],
    ),
    (
        "timecode",
        "en",
        "yesterday's shipment numbers show up under today's date in the report",
        ['datetime.now(ZoneInfo("Asia/Seoul")).date()'],
        [],
    ),
    ("timecode", "en", "What did we change in October to make CI faster?", ["cache: pip"], []),
    (
        "timecode",
        "en",
        "About a month ago we added a purge job for old tracking events; what batch size does it delete in?",
        ["batches of 5000 rows"],
        [],
    ),
    (
        "timecode",
        "en",
        "`created_at` values like 2026-10-10T16:29:51.204411 come back without an offset",
        ["timezone-aware UTC datetimes"],
        [],
    ),
    ("timecode", "en", "the nightly report runs at 06:00 KST, is that an rq-scheduler job?", ["no rq-scheduler"], []),
    (
        "timecode",
        "en",
        "label links generated with ExpiresIn=900 stop working after 15 minutes, is that intended?",
        ["presigned GET URLs that expire after 15 minutes"],
        [],
    ),
    # ---- exact identifiers ----------------------------------------------------------------------------
    ("identifier", "en", "ix_shipments_org_id_created_at", ["ix_shipments_org_id_created_at"], []),
    (
        "identifier",
        "en",
        "where is uq_tracking_events_carrier_event_id defined?",
        ["uq_tracking_events_carrier_event_id"],
        [],
    ),
    ("identifier", "en", "What is RESET_MAX_AGE set to?", ["RESET_MAX_AGE = 3600"], []),
    ("identifier", "en", "How is the X-Parcelwise-Signature header computed?", ["HMAC-SHA256 of the raw body"], []),
    ("identifier", "en", "What does INVOICE_RE accept for CJ invoice numbers?", ["INVOICE_RE"], []),
    ("identifier", "en", "what is the 0019_merge_heads migration for?", ["0019_merge_heads"], []),
    (
        "identifier",
        "en",
        "Who is in REPORT_RECIPIENTS in production?",
        ["REPORT_RECIPIENTS=founders@parcelwise.kr,ops@parcelwise.kr,cs@parcelwise.kr"],
        [],
    ),
    ("identifier", "en", "What traces_sample_rate does Sentry use?", ["traces_sample_rate=0.1"], []),
    (
        "identifier",
        "en",
        "what did we set worker_max_tasks_per_child to back then?",
        ["worker_max_tasks_per_child=200"],
        [],
    ),
    ("identifier", "en", "GHSA-h75v-3vvj-5mfj", ["GHSA-h75v-3vvj-5mfj in jinja2 3.1.3"], []),
    ("identifier", "en", "What intervals does Retry(max=3) use for label jobs?", ["interval=[10, 30, 60]"], []),
    ("identifier", "en", "Where does VITE_KAKAO_MAP_KEY come from?", ["VITE_KAKAO_MAP_KEY"], []),
    ("identifier", "en", "what expiry does the sms:{shipment_id}:{status} key have?", ["NX EX 600"], []),
    ("identifier", "en", "useVirtualizer estimateSize for the shipments table", ["estimateSize 44 px"], []),
    ("identifier", "en", "weight_grams column migration plan", ["0030 adds weight_grams as nullable"], []),
    # ---- error messages ---------------------------------------------------------------------------------
    (
        "error",
        "en",
        "sqlalchemy.exc.TimeoutError: QueuePool limit of size 10 overflow 5 reached, "
        "connection timed out, timeout 30.00",
        ["The 500s were QueuePool exhaustion"],
        [{"session": "s07", "text": "pool_size=10"}],
    ),
    (
        "error",
        "en",
        "Multiple head revisions are present for given argument 'head'",
        ["Created merge revision 0019_merge_heads"],
        [],
    ),
    ("error", "en", "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:5173/", ["webServer entry"], []),
    (
        "error",
        "en",
        "psycopg.OperationalError: connection failed: Connection refused in the backend CI job",
        ["pg_isready"],
        [],
    ),
    ("error", "en", "release command failed: KeyError: 'DATABASE_URL'", ["fly secrets set DATABASE_URL"], []),
    ("error", "en", "[CRITICAL] WORKER TIMEOUT (pid:412)", ["--timeout 120"], []),
    (
        "error",
        "en",
        "SyntaxError: The requested module 'node:util' does not provide an export named 'styleText'",
        ["node:util"],
        [],
    ),
    (
        "error",
        "en",
        "Timed out 5000ms waiting for expect(locator).toBeVisible() getByText('Label created')",
        ["toBeVisible({ timeout: 15000 })"],
        [],
    ),
    ("error", "en", "error: failed-wheel-build-for-install ╰─> reportlab", ["bumped reportlab to 4.2.5"], []),
    (
        "error",
        "en",
        'could not translate host name "db" to address: Name or service not known',
        [".env.local now sets DATABASE_URL"],
        [],
    ),
    (
        "error",
        "en",
        "AssertionError: assert None is not None where None = Shipment(id=881).label_url",
        ["CELERY_TASK_ALWAYS_EAGER=True so tasks run inline", "Queue(is_async=False)"],
        [],
    ),
    ("error", "en", "evicted_keys keeps climbing and queued jobs disappear", ["maxmemory-policy noeviction"], []),
    # ---- paraphrases: few words shared with the memory -------------------------------------------------
    (
        "paraphrase",
        "en",
        "why did we move off the old task queue?",
        ["switch the task queue from Celery to RQ", "visibility_timeout"],
        [],
    ),
    (
        "paraphrase",
        "en",
        "How can a merchant's server tell that a callback really came from us?",
        ["X-Parcelwise-Signature"],
        [],
    ),
    ("paraphrase", "en", "the API container used to be huge; how did we slim it down?", ["multi-stage build"], []),
    ("paraphrase", "en", "someone keeps guessing passwords on the sign-in endpoint", ["5/minute per client IP"], []),
    ("paraphrase", "en", "spreadsheet apps show garbled Hangul in our exported files", ["utf-8-sig"], []),
    (
        "paraphrase",
        "en",
        "where do printed shipping labels get stored, and how long do the links work?",
        ["presigned GET URLs that expire after 15 minutes"],
        [],
    ),
    ("paraphrase", "en", "we booked two parcels with the German carrier for a single order", ["Idempotency-Key"], []),
    ("paraphrase", "en", "the browser hangs when showing a huge list of parcels", ["@tanstack/react-virtual"], []),
    (
        "paraphrase",
        "en",
        "how do we stop the database from growing forever with old status updates?",
        ["older than 18 months"],
        [],
    ),
    ("paraphrase", "en", "recipients got the same text message twice", ["NX EX 600"], []),
    (
        "paraphrase",
        "en",
        "adding a mandatory field to an enormous table without taking the site down",
        ["0031 sets NOT NULL after the backfill"],
        [],
    ),
    (
        "paraphrase",
        "en",
        "keeping the frontend's request/response typings in sync with the backend",
        ["openapi-typescript"],
        [],
    ),
    (
        "paraphrase",
        "en",
        "our error tracker is full of noise from users closing the tab mid-request",
        ["ignore_errors=[asyncio.CancelledError, ClientDisconnect]"],
        [],
    ),
    ("paraphrase", "en", "how can I find every log line that belongs to one API call?", ["binds request_id"], []),
    ("paraphrase", "en", "merchants want to upload tens of thousands of parcels in one go", ["Postgres COPY"], []),
    (
        "paraphrase",
        "en",
        "what does the liveness probe of the hosting platform actually verify?",
        ["SELECT 1 and a Redis PING"],
        [],
    ),
    (
        "paraphrase",
        "en",
        "a known vulnerability in the template engine dependency",
        ["GHSA-h75v-3vvj-5mfj in jinja2 3.1.3"],
        [],
    ),
    ("paraphrase", "en", "large label batches were being killed on the servers", ["--timeout 120"], []),
    ("paraphrase", "en", "what does the lint target check?", ["ruff check app tests"], []),
    ("paraphrase", "en", "the listing page was slow for our biggest customers", ["ix_shipments_org_id_created_at"], []),
    ("paraphrase", "en", "what happens to background jobs when the carrier is down?", ["interval=[10, 30, 60]"], []),
    # ---- Korean prompts (Korean and English memories) ----------------------------------------------------
    ("korean", "ko", "웹훅 중복 이벤트는 어떻게 막았죠?", ["uq_tracking_events_carrier_event_id"], []),
    ("korean", "ko", "송장번호 형식 검증 규칙이 뭐였지?", ["INVOICE_RE"], []),
    ("korean", "ko", "엑셀에서 CSV 한글 깨지는 문제 어떻게 해결했어?", ["utf-8-sig"], []),
    ("korean", "ko", "다크 모드 선택은 어디에 저장돼?", ["localStorage"], []),
    ("korean", "ko", "관리자, 운영자, 조회자 권한 차이가 어떻게 돼?", ["require_role(Role.OPERATOR)"], []),
    ("korean", "ko", "로그인 시도 제한은 분당 몇 번이야?", ["5/minute per client IP"], []),
    ("korean", "ko", "도커 이미지 크기는 어떻게 줄였어?", ["multi-stage build"], []),
    (
        "korean",
        "ko",
        "야간 리포트 날짜가 하루 밀리는 버그 원인이 뭐였어?",
        ['datetime.now(ZoneInfo("Asia/Seoul")).date()'],
        [],
    ),
    ("korean", "ko", "배송 추적 지도는 어떤 SDK로 그려?", ["카카오맵 JS SDK"], []),
    ("korean", "ko", "주소 정규화 API 결과는 얼마나 캐시해?", ["Redis 에 24시간 캐시"], []),
    (
        "korean",
        "ko",
        "토큰 만료됐을 때 보여주는 한국어 문구가 뭐였지?",
        ["세션이 만료되었습니다. 다시 로그인해 주세요."],
        [],
    ),
    (
        "korean",
        "ko",
        "마이그레이션 헤드가 여러 개라고 에러 나면 어떻게 했었지?",
        ["Created merge revision 0019_merge_heads"],
        [],
    ),
    ("korean", "ko", "리포트의 반품률은 어떻게 계산해?", ["반품률은 전일 배송 완료 건 대비"], []),
    ("korean", "ko", "프론트엔드 번역 파일은 어디 있어?", ["web/src/locales/ko.json"], []),
    ("korean", "ko", "인보이스 금액을 원화로 표시하는 방식은?", ['format_currency(value, "KRW", locale="ko_KR")'], []),
    ("korean", "ko", "CI에서 Python 3.13 빌드가 깨졌던 이유가 뭐야?", ["bumped reportlab to 4.2.5"], []),
    # ---- no match: on-topic (same project, a subject the history never covers) ---------------------------
    ("nomatch_ontopic", "en", "How do we handle Stripe webhook retries for failed payments?", [], []),
    ("nomatch_ontopic", "en", "What's the Kubernetes HPA config for the API pods?", [], []),
    ("nomatch_ontopic", "en", "Add GraphQL subscriptions for shipment status updates", [], []),
    ("nomatch_ontopic", "en", "How did we implement the GDPR data export for merchants?", [], []),
    ("nomatch_ontopic", "en", "Which feature-flag service do we use to roll out features gradually?", [], []),
    ("nomatch_ontopic", "en", "What's the agreed SLA for CJ Logistics tracking API response times?", [], []),
    ("nomatch_ontopic", "en", "How are customs declarations generated for international shipments?", [], []),
    ("nomatch_ontopic", "en", "How do we do blue-green deploys with database rollbacks?", [], []),
    ("nomatch_ontopic", "en", "Set up Storybook for the React components", [], []),
    ("nomatch_ontopic", "en", "Which password hashing algorithm do user accounts use?", [], []),
    ("nomatch_ontopic", "en", "How is the scanner app distributed to warehouse devices?", [], []),
    ("nomatch_ontopic", "en", "How long do we keep label PDFs in S3 before deleting them?", [], []),
    ("nomatch_ontopic", "en", "Which Postgres extension powers fuzzy search on recipient names?", [], []),
    ("nomatch_ontopic", "en", "How do we rotate the JWT signing secret without logging everyone out?", [], []),
    ("nomatch_ontopic", "en", "Which analytics tool tracks page views in the frontend?", [], []),
    (
        "nomatch_ontopic",
        "en",
        "What is the autoscaling policy for the API machines on Fly?",
        [],
        [],
    ),
    ("nomatch_ontopic", "en", "What does the warehouse pick-list endpoint return?", [], []),
    ("nomatch_ontopic", "en", "Add a changelog generator to the release process", [], []),
    ("nomatch_ontopic", "en", "How do we compute shipping rates for oversized parcels?", [], []),
    ("nomatch_ontopic", "en", "How are transactional emails translated into Japanese?", [], []),
    ("nomatch_ontopic", "en", "Who is on call this week and where is the rotation defined?", [], []),
    # ---- no match: off-topic -------------------------------------------------------------------------
    ("nomatch_offtopic", "en", "What's a good recipe for banana bread?", [], []),
    ("nomatch_offtopic", "en", "Explain the difference between TCP and UDP.", [], []),
    ("nomatch_offtopic", "en", "Write a haiku about autumn leaves.", [], []),
    ("nomatch_offtopic", "en", "How do I center a div with flexbox?", [], []),
    ("nomatch_offtopic", "en", "What is the capital of Australia?", [], []),
    ("nomatch_offtopic", "en", "Recommend a quiet mechanical keyboard for programming.", [], []),
    # ---- no match: Korean ------------------------------------------------------------------------------
    ("nomatch_korean", "ko", "결제 환불 처리 로직은 어디에 있어?", [], []),
    ("nomatch_korean", "ko", "쿠버네티스 배포 설정 좀 알려줘", [], []),
    ("nomatch_korean", "ko", "오늘 점심 뭐 먹을까?", [], []),
    ("nomatch_korean", "ko", "모바일 앱 푸시 알림은 어떻게 보내?", [], []),
    ("nomatch_korean", "ko", "고객센터 챗봇 연동은 어떻게 했어?", [], []),
    ("nomatch_korean", "ko", "배송비 계산 공식이 뭐야?", [], []),
    ("nomatch_korean", "ko", "신입 개발자 온보딩 문서는 어디 있어?", [], []),
    # ---- pasted tracebacks and logs (generic lines like "Traceback (most recent call last):" in every one) ---
    (
        "error",
        "en",
        "Getting this in prod again:\nTraceback (most recent call last):\n"
        '  File "/app/app/api/shipments.py", line 88, in list_shipments\n    rows = db.execute(stmt).all()\n'
        '  File "/app/.venv/lib/python3.12/site-packages/sqlalchemy/pool/impl.py", line 168, in _do_get\n'
        "    raise exc.TimeoutError(\nsqlalchemy.exc.TimeoutError: QueuePool limit of size 25 overflow 10 reached, "
        "connection timed out, timeout 30.00",
        ["pool_size=25, max_overflow=10"],
        [{"session": "s07", "text": "pool_size=10"}],
    ),
    (
        "error",
        "en",
        "CI log from the backend job:\nRun pytest -q\n"
        "E   psycopg.OperationalError: connection failed: Connection refused\n"
        "##[error]Process completed with exit code 1.",
        ["pg_isready"],
        [],
    ),
    (
        "nomatch_ontopic",
        "en",
        "What is this?\nTraceback (most recent call last):\n"
        '  File "/app/app/carriers/cj_logistics.py", line 57, in parse_event\n    code = payload["statusCode"]\n'
        "KeyError: 'statusCode'",
        [],
        [],
    ),
    (
        "nomatch_korean",
        "ko",
        "이 에러 처음 보는데 뭐야?\nTraceback (most recent call last):\n"
        '  File "/app/app/billing/invoice.py", line 31, in render\n'
        "UnicodeEncodeError: 'latin-1' codec can't encode characters in position 0-3: ordinal not in range(256)",
        [],
        [],
    ),
    (
        "error",
        "en",
        "ValueError: invalid literal for int() with base 10: 'EV8812034'",
        ["keeps eventId as a string"],
        [],
    ),
    ("error", "en", "KeyError: 'NanumGothic' in render_label", ["registers assets/fonts/NanumGothic.ttf"], []),
    (
        "korean",
        "ko",
        "한글 이름이 들어간 라벨이 안 만들어지던 문제 어떻게 고쳤어?",
        ["registers assets/fonts/NanumGothic.ttf"],
        [],
    ),
]

NOWS = [
    "2026-11-24T09:40:00+09:00",
    "2026-11-24T14:05:00+09:00",
    "2026-11-25T10:20:00+09:00",
    "2026-11-25T16:45:00+09:00",
    "2026-11-26T11:30:00+09:00",
]


def main() -> None:
    out = []
    seen: dict[str, int] = {}
    for n, (category, lang, query, expect, stale) in enumerate(QUERIES, 1):
        i = seen.get(category, 0)
        seen[category] = i + 1
        out.append(
            {
                "id": f"q{n:03d}",
                "split": "dev" if i % 5 in (0, 2) else "test",
                "category": category,
                "lang": lang,
                "query": query,
                "now": NOWS[n % len(NOWS)],
                "expect": expect,
                "stale": stale,
            }
        )
    path = Path(__file__).with_name("queries.jsonl")
    path.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in out), encoding="utf-8")
    match = sum(1 for q in out if q["expect"])
    print(
        f"{len(out)} queries: {match} match, {len(out) - match} no-match;"
        f" dev {sum(q['split'] == 'dev' for q in out)}, test {sum(q['split'] == 'test' for q in out)}"
    )


if __name__ == "__main__":
    main()
