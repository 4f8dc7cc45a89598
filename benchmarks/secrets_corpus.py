"""Recall and false positives of the secret filter on the committed corpus, per kind.

    python benchmarks/secrets_corpus.py [--detect-secrets] [--timing] [--show-misses]

Reads tests/fixtures/secrets/positives.jsonl (a secret in realistic surroundings, with the exact
secret substring) and negatives.jsonl (look-alikes that must come through untouched), runs
``memlane.privacy.filter_text`` with the default settings and prints, per kind, how many secrets were
fully removed (a secret counts as leaked when it survives whole or in part: any 8-character piece of
it) and how many negatives were changed.

``--detect-secrets`` adds a column with what the detect-secrets library (all default plugins,
line by line) finds on the same positives, as a cross-check of the hand-ported rules, and its FP
count on the negatives. ``--timing`` measures the import cost of both and the filter's per-event
cost on 1 KB / 10 KB / 100 KB texts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "secrets"
sys.path.insert(0, str(ROOT / "src"))

from memlane.config import PrivacyConfig  # noqa: E402
from memlane.privacy import filter_text  # noqa: E402


def load(name: str) -> list[dict[str, str]]:
    with open(CORPUS / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def pieces(secret: str, size: int = 8) -> list[str]:
    """The secret and every aligned 8-character piece of it (and its tail): none may survive."""
    if len(secret) <= size:
        return [secret]
    out = [secret[i : i + size] for i in range(0, len(secret) - size + 1, size)]
    out.append(secret[-size:])
    return out


def leaked(secret: str, original: str, filtered: str) -> bool:
    """Does any piece of the secret remain (more often than the rest of the original text has it)?"""
    rest = original.replace(secret, "\0")
    return any(filtered.count(p) > rest.count(p) for p in pieces(secret))


def detect_secrets_hits(texts: list[str]) -> list[bool]:
    """Does detect-secrets (default plugins and filters, as `detect-secrets scan` runs them) flag each text?"""
    import tempfile

    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    out = []
    with default_settings(), tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(texts):
            path = Path(tmp) / f"sample{i}.txt"  # a neutral name: some filters look at file names
            path.write_text(text, encoding="utf-8")
            secrets = SecretsCollection()
            secrets.scan_file(str(path))
            out.append(bool(list(secrets)))
    return out


def timing() -> None:
    def import_ms(stmt: str) -> float:
        runs = []
        for _ in range(7):
            code = f"import time; t=time.perf_counter(); {stmt}; print((time.perf_counter()-t)*1000)"
            res = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src")}
            )
            runs.append(float(res.stdout.strip() or "nan"))
        return sorted(runs)[len(runs) // 2]

    both = import_ms("import re; import memlane.privacy")
    # the second statement restarts the clock: only the module's own regex compilation is timed
    own = import_ms("import re; t=time.perf_counter(); import memlane.privacy")
    print(f"import re + memlane.privacy (median of 7): {both:.1f} ms")
    print(f"import memlane.privacy after re:            {own:.1f} ms")
    try:
        import detect_secrets  # noqa: F401

        stmt = "from detect_secrets.core.scan import scan_line; from detect_secrets.settings import default_settings"
        print(f"import detect_secrets (scan + settings):    {import_ms(stmt):.1f} ms")
    except ImportError:
        print("detect-secrets not installed")
    cfg = PrivacyConfig()
    line = "2026-11-25T03:10:11Z INFO GET /api/v1/items/42 status=200 id=123e4567-e89b-12d3-a456-426614174000\n"
    env = "PATH=/usr/bin\nHOME=/home/dev\nPWD=/home/dev/api\nDB_PASSWORD=Falcon2291!river\n"
    for size in (1_000, 10_000, 100_000):
        text = (line * (size // len(line) + 1))[:size] + env
        filter_text(text, cfg)
        n = max(5, 2_000_000 // size)
        start = time.perf_counter()
        for _ in range(n):
            filter_text(text, cfg)
        print(f"filter_text on {size // 1000:>3} KB: {(time.perf_counter() - start) / n * 1000:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--detect-secrets", action="store_true", help="cross-check with the detect-secrets library")
    parser.add_argument("--timing", action="store_true", help="import and per-event cost")
    parser.add_argument("--show-misses", action="store_true", help="print leaked positives and changed negatives")
    args = parser.parse_args()
    cfg = PrivacyConfig()
    pos, neg = load("positives.jsonl"), load("negatives.jsonl")
    ds_pos = detect_secrets_hits([p["text"] for p in pos]) if args.detect_secrets else []
    ds_neg = detect_secrets_hits([n["text"] for n in neg]) if args.detect_secrets else []

    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # total, caught, detect-secrets caught
    misses = []
    for i, row in enumerate(pos):
        out = filter_text(row["text"], cfg).text
        stats = per_kind[row["kind"]]
        stats[0] += 1
        if leaked(row["secret"], row["text"], out):
            misses.append((row, out))
        else:
            stats[1] += 1
        if ds_pos and ds_pos[i]:
            stats[2] += 1
    neg_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # total, changed, detect-secrets flagged
    changed = []
    for i, row in enumerate(neg):
        out = filter_text(row["text"], cfg).text
        stats = neg_kind[row["kind"]]
        stats[0] += 1
        if out != row["text"]:
            stats[1] += 1
            changed.append((row, out))
        if ds_neg and ds_neg[i]:
            stats[2] += 1

    ds = " | detect-secrets" if args.detect_secrets else ""
    print(f"\npositives: {len(pos)} over {len(per_kind)} kinds\n")
    print(f"| kind | n | recall{ds} |")
    print("|---|---:|---:|" + ("---:|" if ds else ""))
    for kind, (n, ok, dsok) in sorted(per_kind.items()):
        extra = f" | {dsok / n:.2f}" if ds else ""
        print(f"| {kind} | {n} | {ok / n:.2f}{extra} |")
    total_ok = sum(v[1] for v in per_kind.values())
    extra = f" | {sum(v[2] for v in per_kind.values()) / len(pos):.2f}" if ds else ""
    print(f"| **all** | {len(pos)} | {total_ok / len(pos):.3f}{extra} |")

    print(f"\nnegatives: {len(neg)} over {len(neg_kind)} kinds\n")
    print(f"| kind | n | false positives{ds} |")
    print("|---|---:|---:|" + ("---:|" if ds else ""))
    for kind, (n, bad, dsbad) in sorted(neg_kind.items()):
        extra = f" | {dsbad}" if ds else ""
        print(f"| {kind} | {n} | {bad}{extra} |")
    total_bad = sum(v[1] for v in neg_kind.values())
    extra = (
        f" | {sum(v[2] for v in neg_kind.values())} ({sum(v[2] for v in neg_kind.values()) / len(neg):.1%})"
        if ds
        else ""
    )
    print(f"| **all** | {len(neg)} | {total_bad} ({total_bad / len(neg):.1%}){extra} |")

    if args.show_misses:
        for row, out in misses:
            print(f"\nLEAK {row['kind']}/{row.get('context')}: {row['text']!r}\n  -> {out!r}")
        for row, out in changed:
            print(f"\nFP {row['kind']}: {row['text']!r}\n  -> {out!r}")
    if args.timing:
        print()
        timing()


if __name__ == "__main__":
    main()
