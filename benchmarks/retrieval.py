"""Every retrieval benchmark, one table: plain BM25, memlane full-text, memlane hybrid, and the hook path.

    python benchmarks/retrieval.py [--split test|dev] [--lme PATH] [--lme-stride 10] [--cache DIR] [--skip-lme]

- **LongMemEval-S** (read from ``--lme``; skipped with a note when absent): fixed dev/test split by
  question id (``longmemeval.split_of``); session recall_any@5, turn recall_any@10, and — for memlane —
  how often the evidence turn is among what the hook would inject and how many memories it injects.
- **Coding replay** (``benchmarks/coding_replay/``, in the repository): a project's history imported
  from real Claude Code and Codex files; match queries must get the right memory injected, no-match
  queries must get nothing, and no superseded answer may be injected.

Tune on ``--split dev`` only (``benchmarks/calibrate.py``); report ``--split test``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEFAULT_LME = HERE.parents[1] / "shared" / "data" / "longmemeval" / "longmemeval_s_cleaned_498q.json.gz"


def lme_rows(path: Path, split: str, stride: int, cache: Path | None) -> list[list[str]]:
    import longmemeval as lme

    questions = lme.select(path, split, stride)
    rows = []
    for mode in ("bm25", "text", "hybrid"):
        r = lme.evaluate(questions, mode, cache, quiet=True)
        inj = f"{r['injected_evidence']:.3f}" if "injected_evidence" in r else "—"
        count = f"{r['injected_count']:.2f}" if "injected_count" in r else "—"
        rows.append(
            [
                f"LongMemEval-S {split} ({len(questions)} q)",
                mode,
                f"{r['recall_any@5']:.3f}",
                f"{r['turn_recall_any@10']:.3f}",
                inj,
                count,
                "—",
                "—",
            ]
        )
    return rows


def replay_rows(split: str) -> list[list[str]]:
    """One row per column of ``coding_replay.py`` (bm25, fts, hybrid: top 5; hook, fallback: injected)."""
    out = subprocess.run(
        [sys.executable, str(HERE / "coding_replay.py"), "--split", split, "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    summary: dict[str, Any] = json.loads(out)["splits"][split]
    match, nomatch = summary["rows"]["ALL MATCH"], summary["rows"]["ALL NO-MATCH"]
    name = f"coding replay {split} ({match['n']} match, {nomatch['n']} no-match)"
    rows = []
    for col in summary["columns"]:
        injected = summary["injection"].get(col, {})
        injects = col in summary["injection"]
        rows.append(
            [
                name,
                {"fts": "text", "hook": "hook (daemon)", "fallback": "hook (full-text fallback)"}.get(col, col),
                "—" if injects else _fmt(match.get(col)),
                "—",
                _fmt(match.get(col)) if injects else "—",
                _fmt(injected.get("avg_injected"), 2),
                _fmt(nomatch.get(col)),
                f"{summary['stale'][col]}/{summary['stale_n']}" if injects else "—",
            ]
        )
    return rows


def _fmt(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


HEADER = [
    "benchmark",
    "mode",
    "top-5 / recall_any@5",
    "turn@10",
    "injected right",
    "avg injected",
    "no-match silent",
    "stale injected",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "test"], default="test")
    ap.add_argument("--lme", type=Path, default=DEFAULT_LME)
    ap.add_argument("--lme-stride", type=int, default=10, help="every K-th question of the split")
    ap.add_argument("--cache", type=Path, help="LongMemEval haystack vector cache")
    ap.add_argument("--skip-lme", action="store_true")
    args = ap.parse_args()
    rows = replay_rows(args.split)
    if args.skip_lme:
        pass
    elif args.lme.exists():
        rows += lme_rows(args.lme, args.split, args.lme_stride, args.cache)
    else:
        print(f"LongMemEval skipped: no data at {args.lme} (pass --lme)", file=sys.stderr)
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    for row in [HEADER, ["-" * w for w in widths], *rows]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


if __name__ == "__main__":
    main()
