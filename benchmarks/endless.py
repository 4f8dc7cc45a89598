"""Endless mode against session mode on a multi-day replay: does what SessionStart injects hold the memory the new
session's first prompt needs?

    python benchmarks/endless.py [--windows 24,168] [--json] [--show]

The coding replay's 61 recorded sessions of one project (benchmarks/coding_replay/, four months, 2026-07-20 →
2026-11-23) are imported one at a time in the order they happened, into a fresh store, with what the daemon does
between sessions (the projection, then the endless job: continuity, working set, consolidation — the project is
idle for days between sessions, so consolidation is due). Before each session is imported, the SessionStart text
it would have been given is built both ways, body only (no project rules or volatile context, the same budget,
``injection.max_chars``):

  session  capture/inject.session_start_context: the last session's summary and the recent prompts
  endless  endless/inject.session_start_context: the working set of the last N hours of activity (one run per
           ``--windows`` value) and the long-running topics

What a first prompt *needs*, defined from the fixtures, not from either mode:

  files    the session goes on to touch (edit, write, read, run or name) a file an earlier session touched: it
           needs a memory of that file, i.e. an earlier event that marked it. "cited": the injection cites one
           of those events ([mem:xxxxxx]); "named": it names the file at all (a recap's "Files changed:" line)
  updates  the session's events contain the ``expect`` marker of an update query of
           benchmarks/coding_replay/queries.jsonl whose ``stale`` marker is in an earlier session (it changed what
           that session had set up: Celery → RQ, pool_size 10 → 25, …): it needs the stale memory. "cited" only.

Rates are over the sessions that have a need (the first session never has one).

A second table, **compaction**: Claude Code compacts a long conversation and then fires SessionStart again
(``source: compact``) in the *same* session. For each recorded Claude Code session with two prompts (4 of them),
a store holds every earlier session and that session up to its second prompt; the SessionStart after a
compaction there needs the session's own first exchange (its prompt, tool calls and answer), and "cited" says
whether the injection cites one of those events. (The Codex session with two prompts is left out: its rollout
is not cut as easily.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "coding_replay" / "transcripts"
QUERIES = HERE / "coding_replay" / "queries.jsonl"
CITE = re.compile(r"\[(mem:[0-9a-z]{6})\]")


def replay_module() -> Any:
    spec = importlib.util.spec_from_file_location("coding_replay", HERE / "coding_replay.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def update_pairs(replay: Any) -> list[dict[str, Any]]:
    """Update queries: (stale markers, expected markers)."""
    queries = [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in queries if q["category"] == "update" and q.get("stale")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", default="24,168", help="working-set windows (hours) to run endless mode with")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", action="store_true", help="print each session's needs and hits")
    args = ap.parse_args()
    windows = [float(w) for w in args.windows.split(",") if w.strip()]
    work = Path(tempfile.mkdtemp(prefix="memlane-endless-bench-"))
    os.environ["MEMLANE_HOME"] = str(work / "home")
    replay = replay_module()
    root = work / "parcelwise"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    paths = replay.materialize(FIXTURES, work / "transcripts", root)
    manifest = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))
    replay.load_sessions(FIXTURES)
    by_name = {Path(p).name: p for p in paths}
    order = sorted(manifest.items(), key=lambda kv: kv[1]["at"])

    from memlane import config, derived, project
    from memlane.capture import inject as session_inject
    from memlane.endless import inject as endless_inject
    from memlane.endless import service
    from memlane.importers import Importer, Options, discover
    from memlane.memory import Memory

    cfg = config.load()
    proj = project.identify(root)
    pairs = update_pairs(replay)
    modes = ["session"] + [f"endless {w:g} h" for w in windows]
    rows: list[dict[str, Any]] = []
    with Memory.open(root, cfg=cfg) as mem:
        store = mem.store
        for n, (hid, entry) in enumerate(order):
            sid = replay.SESSIONS[hid]
            texts: dict[str, str] = {}
            if n:
                derived.catch_up(store)
                texts["session"] = session_inject.session_start_context(store, sid, cfg)
                for w in windows:
                    wcfg = config.load()
                    wcfg.endless.window_hours = w
                    service.refresh(store, wcfg, consolidate=True)
                    texts[f"endless {w:g} h"] = endless_inject.session_start_context(store, wcfg)
            earlier = {e.id for e in store.iter_events()}
            files = [by_name[Path(f).name[: -len(".gz")]] for f in entry["files"]]
            options = Options(["claude", "codex"], files)
            Importer(proj, options, cfg).run(discover(proj, options))
            derived.catch_up(store)
            if not n:
                continue
            rows.append(need_and_hits(store, replay, hid, sid, earlier, pairs, texts))
        derived.catch_up(store)
        service.refresh(store, cfg, consolidate=True)
        scores = [c for c in store.continuity(limit=1000) if c["score"] is not None]
    compaction = compaction_rows(replay, work, manifest, order, windows, cfg)
    report = summarise(rows, modes, scores)
    report["compaction"] = {mode: {"cited": sum(r[mode] for r in compaction), "of": len(compaction)} for mode in modes}
    if args.json:
        print(json.dumps({"rows": rows, "compaction": compaction, "summary": report}, indent=1))
        return
    if args.show:
        for row in rows + compaction:
            print(row["id"], json.dumps({k: v for k, v in row.items() if k != "id"}))
    print_table(report, modes)


def cut_before_second_prompt(path: str, dest: Path) -> None:
    """A Claude Code transcript up to (not including) its second typed prompt."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    prompts = [
        n
        for n, line in enumerate(lines)
        if (d := json.loads(line)).get("type") == "user" and isinstance((d.get("message") or {}).get("content"), str)
    ]
    end = prompts[1]
    while end and json.loads(lines[end - 1]).get("type") == "queue-operation":
        end -= 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join(lines[:end]) + "\n", encoding="utf-8")


def compaction_rows(
    replay: Any, work: Path, manifest: dict[str, Any], order: list[tuple[str, Any]], windows: list[float], cfg: Any
) -> list[dict[str, Any]]:
    """Each two-prompt Claude Code session, cut before its second prompt on top of every earlier session, in a
    project of its own: does SessionStart after a compaction cite the session's own first exchange?"""
    from memlane import config, derived, project
    from memlane.capture import inject as session_inject
    from memlane.endless import inject as endless_inject
    from memlane.endless import service
    from memlane.importers import Importer, Options, discover
    from memlane.memory import Memory

    out = []
    for n, (hid, entry) in enumerate(order):
        if entry["cli"] != "claude" or len(history_prompts(hid)) < 2:
            continue
        root = work / f"compact-{hid}"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        paths = replay.materialize(FIXTURES, work / f"transcripts-{hid}", root)
        by_name = {Path(p).name: p for p in paths}
        files = [by_name[Path(f).name[: -len(".gz")]] for _, e in order[:n] for f in e["files"]]
        own = by_name[Path(entry["files"][0]).name[: -len(".gz")]]
        cut = work / f"cut-{hid}" / Path(own).name
        cut_before_second_prompt(own, cut)
        proj = project.identify(root)
        options = Options(["claude", "codex"], [*files, str(cut)])
        Importer(proj, options, cfg).run(discover(proj, options))
        sid = replay.SESSIONS[hid]
        row: dict[str, Any] = {"id": hid}
        with Memory.open(root, cfg=cfg) as mem:
            derived.catch_up(mem.store)
            need = {
                e.id
                for e in mem.store.iter_events()
                if e.session_id == sid and e.type in ("user_prompt", "tool_observation", "agent_response")
            }
            cites = set(mem.store.citations(list(need)).values())
            text = session_inject.session_start_context(mem.store, sid, cfg)
            row["session"] = bool(cites & set(CITE.findall(text)))
            for w in windows:
                wcfg = config.load()
                wcfg.endless.window_hours = w
                service.refresh(mem.store, wcfg, consolidate=True)
                text = endless_inject.session_start_context(mem.store, wcfg)
                row[f"endless {w:g} h"] = bool(cites & set(CITE.findall(text)))
        out.append(row)
    return out


def history_prompts(hid: str) -> list[str]:
    sys.path.insert(0, str(HERE / "coding_replay"))
    import history

    return [p["prompt"] for s in history.SESSIONS if s["id"] == hid for p in s["prompts"]]


def need_and_hits(
    store: Any, replay: Any, hid: str, sid: str, earlier: set[str], pairs: list[dict[str, Any]], texts: dict[str, str]
) -> dict[str, Any]:
    """What session ``hid``'s first prompt needed, and which mode's injection had it."""
    files = sorted({key for kind, key in store.session_keys(sid) if kind == "file"})
    marks = store.events_marking("file", files)
    file_need = {eid for eid, _ in marks if eid in earlier}
    needed_files = sorted({key for eid, key in marks if eid in earlier})
    own = [e for e in store.iter_events() if e.session_id == sid]
    update_need: set[str] = set()
    for q in pairs:
        if any(replay.matches(e, q["expect"]) for e in own):
            update_need |= {e.id for e in store.by_ids(list(earlier)) if replay.matches(e, q["stale"])}
    cites = store.citations(list(file_need | update_need))
    row: dict[str, Any] = {"id": hid, "files_needed": needed_files, "updates_needed": len(update_need)}
    for mode, text in texts.items():
        cited = set(CITE.findall(text))
        row[mode] = {
            "chars": len(text),
            "files_cited": bool(file_need) and any(cites[e] in cited for e in file_need),
            "files_named": bool(needed_files) and any(f in text for f in needed_files),
            "updates_cited": bool(update_need) and any(cites[e] in cited for e in update_need),
        }
    return row


def summarise(rows: list[dict[str, Any]], modes: list[str], scores: list[dict[str, Any]]) -> dict[str, Any]:
    with_files = [r for r in rows if r["files_needed"]]
    with_updates = [r for r in rows if r["updates_needed"]]
    out: dict[str, Any] = {
        "sessions": len(rows) + 1,
        "need_files": len(with_files),
        "need_updates": len(with_updates),
        "modes": {},
        "continuity": {
            "scored": len(scores),
            "mean": round(sum(s["score"] for s in scores) / len(scores), 3) if scores else None,
            "transitions": {
                t: sum(1 for s in scores if s["transition"] == t) for t in ("seamless", "topic_shift", "break")
            },
        },
    }
    for mode in modes:
        out["modes"][mode] = {
            "files_cited": sum(r[mode]["files_cited"] for r in with_files),
            "files_named": sum(r[mode]["files_named"] for r in with_files),
            "updates_cited": sum(r[mode]["updates_cited"] for r in with_updates),
            "any_need_met": sum(
                (r[mode]["files_cited"] or r[mode]["updates_cited"])
                for r in rows
                if r["files_needed"] or r["updates_needed"]
            ),
            "need_any": sum(1 for r in rows if r["files_needed"] or r["updates_needed"]),
            "median_chars": sorted(r[mode]["chars"] for r in rows)[len(rows) // 2],
        }
    return out


def print_table(s: dict[str, Any], modes: list[str]) -> None:
    print(
        f"\n{s['sessions']} sessions in time order; {s['need_files']} first prompts need a memory of a file an earlier"
        f" session touched, {s['need_updates']} need the memory their session updates (queries.jsonl)\n"
    )
    print(
        f"{'SessionStart':<16}{'files: cited':>14}{'files: named':>14}{'updates: cited':>16}{'any, cited':>12}"
        f"{'chars p50':>11}"
    )
    for mode in modes:
        m = s["modes"][mode]
        print(
            f"{mode:<16}{_rate(m['files_cited'], s['need_files']):>14}{_rate(m['files_named'], s['need_files']):>14}"
            f"{_rate(m['updates_cited'], s['need_updates']):>16}{_rate(m['any_need_met'], m['need_any']):>12}"
            f"{m['median_chars']:>11}"
        )
    c = s["continuity"]
    print(f"\ncontinuity between consecutive sessions: mean {c['mean']} over {c['scored']}; {c['transitions']}")
    print("\nSessionStart after a compaction (the same session goes on): its own first exchange cited")
    for mode in modes:
        m = s["compaction"][mode]
        print(f"  {mode:<16}{_rate(m['cited'], m['of'])}")


def _rate(hit: int, total: int) -> str:
    return f"{hit}/{total} {hit / total:.2f}" if total else "-"


if __name__ == "__main__":
    sys.exit(main())
