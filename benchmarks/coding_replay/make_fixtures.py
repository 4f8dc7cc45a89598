"""Play history.py through the real Claude Code CLI and the real Codex CLI, offline; keep their transcripts.

    python benchmarks/coding_replay/make_fixtures.py --claude PATH/TO/claude --codex PATH/TO/codex [--only s01,s02]

For every session: a fresh project folder (a git repo, seeded with the files its edits change), a
scripted model on loopback (stub_anthropic_queue.py for Claude Code, ../shared/codex/stub_openai_responses.py
for Codex), and the project's tools replaced by shim.py so commands print the history's outputs (the CLI
runs them as real processes and records what they printed and their exit codes). Afterwards the
transcript is moved from the CLI's run time to the session's date in history.py (timestamps shifted, one
second of the run stretched to 40 s), the scratch root is cut from paths, and it is stored gzipped in
transcripts/{claude,codex}/. Claude Code sessions are one `claude -p` per prompt (`--continue` after the
first); Codex ones `codex exec` (then `codex exec resume`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from history import ROOT, SESSIONS  # noqa: E402

DEMO = "/var/tmp/replaydemo"  # scratch root; Codex refuses helper binaries under /tmp
HOME = f"{DEMO}/home/dev"
PROJ = f"{DEMO}{ROOT}"
SHIMS = f"{DEMO}/shims"
STRETCH = 40  # one second of the scripted run becomes 40 s of history
CODEX_STUB = Path(os.environ.get("CODEX_STUB", "/work/shared/codex/stub_openai_responses.py"))
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$")


def real(path: str) -> str:
    return DEMO + path if path.startswith("/home/dev") else path


def stages(cmd: str) -> list[tuple[str, bool]]:
    """(shim key, is the command's first stage) for each stage of `a | b && c`."""
    out = []
    for n, part in enumerate(cmd.split(" && ")):
        for m, stage in enumerate(part.split(" | ")):
            words = shlex.split(stage)
            out.append((" ".join(words), n == 0 and m == 0, m == 0))
    return [(k, first) for k, first, head in out if head]


def prepare(session: dict[str, Any]) -> dict[str, Any]:
    """Fresh project, shims, and the command table for one session."""
    shutil.rmtree(PROJ, ignore_errors=True)
    os.makedirs(PROJ)
    subprocess.run(["git", "init", "-q", "-b", "main", PROJ], check=True)
    table: dict[str, Any] = {}
    for prompt in session["prompts"]:
        for step in prompt["steps"]:
            if step["kind"] == "edit":
                path = Path(real(step["path"]))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(step["before"], encoding="utf-8")
            if step["kind"] == "bash":
                for rel, content in step["files"].items():
                    path = Path(PROJ) / rel
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(content, encoding="utf-8")
                for key, first in stages(step["cmd"]):
                    table.setdefault(key, []).append(
                        {"out": step["out"], "rc": step["rc"]} if first else {"out": "", "rc": 0}
                    )
    subprocess.run(["git", "-C", PROJ, "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            PROJ,
            "-c",
            "user.name=Dev",
            "-c",
            "user.email=dev@example.com",
            "commit",
            "-qm",
            "wip",
            "--allow-empty",
        ],
        check=True,
    )
    shutil.rmtree(SHIMS, ignore_errors=True)
    os.makedirs(SHIMS)
    shutil.copy(HERE / "shim.py", f"{SHIMS}/_shim.py")
    os.chmod(f"{SHIMS}/_shim.py", 0o755)
    for key in table:
        name = key.split(" ")[0]
        if not os.path.exists(f"{SHIMS}/{name}"):
            os.symlink("_shim.py", f"{SHIMS}/{name}")
    cmds = f"{DEMO}/cmds.json"
    Path(cmds).write_text(json.dumps(table), encoding="utf-8")
    for misses in [cmds + ".misses", cmds + ".state"]:
        if os.path.exists(misses):
            os.remove(misses)
    return {"cmds": cmds}


def env(cmds: str) -> dict[str, str]:
    e = dict(os.environ)
    e.update(
        HOME=HOME,
        PATH=f"{SHIMS}:{os.environ['PATH']}",
        REPLAY_CMDS=cmds,
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{PORTS['claude']}",
        ANTHROPIC_API_KEY="sk-ant-test",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        CODEX_HOME=f"{HOME}/.codex",
        STUB_OPENAI_API_KEY="dummy-not-a-real-key",
    )
    return e


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORTS = {"claude": free_port(), "codex": free_port()}


def wait_port(port: int) -> None:
    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"stub on {port} did not start")


# ---- Claude Code ------------------------------------------------------------------------------------


def claude_queue(session: dict[str, Any]) -> list[dict[str, Any]]:
    queue = []
    for prompt in session["prompts"]:
        for step in prompt["steps"]:
            path = real(step.get("path", ""))
            if step["kind"] == "bash":
                queue.append(
                    {
                        "text": step["say"],
                        "tool": "Bash",
                        "input": {"command": step["cmd"], "description": step["cmd"].split(" ")[0]},
                    }
                )
            elif step["kind"] == "write":
                queue.append(
                    {"text": step["say"], "tool": "Write", "input": {"file_path": path, "content": step["content"]}}
                )
            else:
                queue.append({"text": step["say"], "tool": "Read", "input": {"file_path": path}})
                queue.append(
                    {
                        "tool": "Edit",
                        "input": {
                            "file_path": path,
                            "old_string": step["old"],
                            "new_string": step["new"],
                            "replace_all": False,
                        },
                    }
                )
        queue.append({"final": prompt["final"]})
    return queue


def run_claude(session: dict[str, Any], binary: str, logdir: Path) -> Path:
    ctx = prepare(session)
    script = logdir / f"{session['id']}.queue.json"
    script.write_text(json.dumps({"queue": claude_queue(session)}, ensure_ascii=False), encoding="utf-8")
    stub = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "stub_anthropic_queue.py"),
            "--port",
            str(PORTS["claude"]),
            "--script",
            str(script),
            "--log",
            str(logdir / f"{session['id']}.requests.jsonl"),
        ]
    )
    try:
        wait_port(PORTS["claude"])
        projects = Path(HOME) / ".claude" / "projects"
        before = set(projects.rglob("*.jsonl")) if projects.exists() else set()
        for n, prompt in enumerate(session["prompts"]):
            args = [binary, "-p", prompt["prompt"], "--allowedTools", "Bash Write Edit Read", "--output-format", "json"]
            if n:
                args.append("--continue")
            done = subprocess.run(
                args,
                cwd=PROJ,
                env=env(ctx["cmds"]),
                capture_output=True,
                text=True,
                timeout=180,
                stdin=subprocess.DEVNULL,
            )
            if done.returncode:
                raise RuntimeError(f"claude exited {done.returncode}: {done.stderr[-500:]}")
        new = [p for p in projects.rglob("*.jsonl") if p not in before and "subagents" not in p.parts]
        if len(new) != 1:
            raise RuntimeError(f"expected one new transcript, found {new}")
        return new[0]
    finally:
        stub.terminate()
        stub.wait()


# ---- Codex --------------------------------------------------------------------------------------------


def codex_config(port: int) -> None:
    os.makedirs(f"{HOME}/.codex", exist_ok=True)
    Path(f"{HOME}/.codex/config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
        '[model_providers.stub]\nname = "Local OpenAI Responses stub"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nenv_key = "STUB_OPENAI_API_KEY"\nwire_api = "responses"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n\n[analytics]\nenabled = false\n",
        encoding="utf-8",
    )
    # Codex runs commands in a login shell, which resets PATH from /etc/profile: put the shims back.
    for rc in (".bash_profile", ".bashrc", ".profile"):
        Path(f"{HOME}/{rc}").write_text(f'export PATH="{SHIMS}:$PATH"\nexport REPLAY_CMDS="{DEMO}/cmds.json"\n')


def patch_for(step: dict[str, Any]) -> str:
    rel = os.path.relpath(step["path"], ROOT)
    if step["kind"] == "write":
        body = "".join(f"+{line}\n" for line in step["content"].rstrip("\n").split("\n"))
        return f"*** Begin Patch\n*** Add File: {rel}\n{body}*** End Patch\n"
    old = step["before"].rstrip("\n").split("\n")
    new = step["before"].replace(step["old"], step["new"], 1).rstrip("\n").split("\n")
    a = 0
    while a < min(len(old), len(new)) and old[a] == new[a]:
        a += 1
    b = 0
    while b < min(len(old), len(new)) - a and old[-1 - b] == new[-1 - b]:
        b += 1
    ctx = old[max(0, a - 2) : a]
    hunk = "".join(f" {x}\n" for x in ctx) + "".join(f"-{x}\n" for x in old[a : len(old) - b])
    hunk += "".join(f"+{x}\n" for x in new[a : len(new) - b])
    hunk += "".join(f" {x}\n" for x in old[len(old) - b :][:2])
    return f"*** Begin Patch\n*** Update File: {rel}\n@@\n{hunk}*** End Patch\n"


def codex_script(prompt: dict[str, Any]) -> list[list[dict[str, Any]]]:
    responses = []
    for step in prompt["steps"]:
        items: list[dict[str, Any]] = []
        if step["say"]:
            items.append({"type": "message", "text": step["say"]})
        if step["kind"] == "bash":
            items.append(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": {"cmd": step["cmd"], "yield_time_ms": 10000, "max_output_tokens": 4000},
                }
            )
        else:
            items.append({"type": "custom_tool_call", "name": "apply_patch", "input": patch_for(step)})
        responses.append(items)
    responses.append([{"type": "message", "text": prompt["final"]}])
    return responses


def run_codex(session: dict[str, Any], binary: str, logdir: Path) -> Path:
    ctx = prepare(session)
    codex_config(PORTS["codex"])
    sessions_dir = Path(HOME) / ".codex" / "sessions"
    before = set(sessions_dir.rglob("rollout-*.jsonl")) if sessions_dir.exists() else set()
    session_id = None
    for n, prompt in enumerate(session["prompts"]):
        script = logdir / f"{session['id']}.{n}.codex.json"
        script.write_text(json.dumps({"responses": codex_script(prompt)}, ensure_ascii=False), encoding="utf-8")
        stub_log = open(logdir / "codex-stub.stderr", "a")  # noqa: SIM115 - closed after the stub exits
        stub = subprocess.Popen(
            [
                sys.executable,
                str(CODEX_STUB),
                "--port",
                str(PORTS["codex"]),
                "--script",
                str(script),
                "--log-dir",
                str(logdir / f"{session['id']}.{n}.stublog"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=stub_log,
        )
        try:
            wait_port(PORTS["codex"])
            args = [binary, "exec", "--sandbox", "danger-full-access", "--skip-git-repo-check"]
            args += ["resume", session_id, prompt["prompt"]] if n else [prompt["prompt"]]
            done = subprocess.run(
                args,
                cwd=PROJ,
                env=env(ctx["cmds"]),
                capture_output=True,
                text=True,
                timeout=180,
                stdin=subprocess.DEVNULL,
            )
            if done.returncode:
                raise RuntimeError(f"codex exited {done.returncode}: {done.stderr[-800:]}")
        finally:
            stub.terminate()
            stub.wait()
            stub_log.close()
        if session_id is None:
            new = [p for p in sessions_dir.rglob("rollout-*.jsonl") if p not in before]
            if len(new) != 1:
                raise RuntimeError(f"expected one new rollout, found {new}")
            session_id = re.search(
                r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$", new[0].name
            ).group(1)
            path = new[0]
    return path


# ---- moving a transcript to its date ------------------------------------------------------------------


def retime(path: Path, at: str) -> tuple[list[str], dt.datetime]:
    lines = path.read_text(encoding="utf-8").splitlines()
    stamps = []
    for line in lines:
        for m in re.finditer(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"', line):
            stamps.append(dt.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")))
    t0 = min(stamps)
    target = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    run_day = t0.strftime("%Y-%m-%d")

    def move(moment: dt.datetime) -> dt.datetime:
        return target + (moment - t0) * STRETCH

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            if ISO.match(value):
                moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
                if moment.tzinfo is None:
                    moment = moment.replace(tzinfo=dt.UTC)
                out = move(moment).astimezone(dt.UTC)
                return out.strftime("%Y-%m-%dT%H:%M:%S.") + f"{out.microsecond // 1000:03d}Z"
            return value.replace(run_day, target.strftime("%Y-%m-%d")).replace(DEMO, "")
        return value

    out = []
    for line in lines:
        obj = walk(json.loads(line))
        if bulky(obj):
            continue
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        text = text.replace(DEMO.replace("/", "-"), "")
        out.append(text)
    return out, target


# Lines that repeat the CLI's whole system prompt and tool schemas in every session (tens of KB each);
# they carry nothing from the conversation and no importer reads them. Left out to keep the fixtures small.
BULKY_TYPES = {"api-request-shape", "api-request-blob"}
BULKY_ATTACHMENTS = {"prompt_snapshot", "skill_listing", "agent_listing_delta", "deferred_tools_delta"}


def bulky(obj: dict[str, Any]) -> bool:
    if obj.get("type") in BULKY_TYPES:
        return True
    return obj.get("type") == "attachment" and (obj.get("attachment") or {}).get("type") in BULKY_ATTACHMENTS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claude", required=True)
    ap.add_argument("--codex")
    ap.add_argument("--only", default="")
    ap.add_argument("--all-claude", action="store_true", help="play Codex sessions through Claude Code too")
    ap.add_argument("--out", type=Path, default=HERE / "transcripts")
    a = ap.parse_args()
    logdir = Path(DEMO + "-logs")
    logdir.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    manifest_path = a.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for session in SESSIONS:
        if only and session["id"] not in only:
            continue
        cli = "claude" if a.all_claude or not a.codex else session["cli"]
        t = time.time()
        produced = run_codex(session, a.codex, logdir) if cli == "codex" else run_claude(session, a.claude, logdir)
        lines, target = retime(produced, session["at"])
        misses = Path(f"{DEMO}/cmds.json.misses")
        missed = [m for m in (misses.read_text().splitlines() if misses.exists() else []) if not m.startswith("git -c")]
        name = produced.name
        if cli == "codex":  # the file name carries the session's local creation time
            name = re.sub(
                r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d", "rollout-" + target.strftime("%Y-%m-%dT%H-%M-%S"), name
            )
        dest = a.out / cli / (name + ".gz")
        dest.parent.mkdir(parents=True, exist_ok=True)
        for stale in manifest.get(session["id"], {}).get("files", []):
            Path(a.out / stale).unlink(missing_ok=True)
        with gzip.open(dest, "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write("\n".join(lines) + "\n")
        os.utime(dest, (0, 0))
        manifest[session["id"]] = {
            "cli": cli,
            "files": [str(dest.relative_to(a.out))],
            "lines": len(lines),
            "at": session["at"],
            "shim_misses": missed,
        }
        print(
            f"{session['id']} {cli:<6} {len(lines):4d} lines {dest.stat().st_size:7d} B  {time.time() - t:4.1f} s"
            + (f"  misses: {missed}" if missed else ""),
            flush=True,
        )
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")


if __name__ == "__main__":
    main()
