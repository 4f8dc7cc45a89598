"""The gate simulation of benchmarks/gate_signals.py: what it counts as right, silent and separated."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import gate_signals as gs


def prompt(kind: str, ps: list[float], good: list[bool], soft: list[float] | None = None) -> dict:
    soft = soft or [0.0] * len(ps)
    rows = [
        {"p": p, "logit_p": math.log(p / (1 - p)), "good": g, "soft": s} for p, g, s in zip(ps, good, soft, strict=True)
    ]
    return {"id": "q", "kind": kind, "lang": "en", "rows": rows}


LOGIT_15 = math.log(0.15 / 0.85)


def test_a_match_is_right_only_when_an_expected_memory_is_injected() -> None:
    assert gs.outcome(prompt("match", [0.6, 0.2], [True, False]), [math.log(0.6 / 0.4), -1.4], LOGIT_15)
    assert not gs.outcome(prompt("match", [0.1], [True]), [math.log(0.1 / 0.9)], LOGIT_15)
    # under half of the best P: not injected, so not right
    weak = prompt("match", [0.8, 0.2], [False, True])
    assert not gs.outcome(weak, [r["logit_p"] for r in weak["rows"]], LOGIT_15)


def test_a_no_match_prompt_is_right_only_when_silent() -> None:
    quiet = prompt("nomatch", [0.1, 0.05], [False, False])
    loud = prompt("nomatch", [0.3], [False])
    assert gs.outcome(quiet, [r["logit_p"] for r in quiet["rows"]], LOGIT_15)
    assert not gs.outcome(loud, [r["logit_p"] for r in loud["rows"]], LOGIT_15)


def test_the_soft_rule_raises_only_hits_in_the_band_with_enough_soft_coverage() -> None:
    p = prompt("match", [0.12, 0.05], [True, False], soft=[0.6, 0.9])
    assert gs.outcome(p, gs.rule(0.10, 0.54)(p), -50)
    assert not gs.outcome(p, gs.rule(0.10, 0.65)(p), -50)  # soft under c
    assert not gs.outcome(p, gs.rule(0.13, 0.54)(p), -50)  # P under b


def test_fit_and_auc_find_a_separating_signal() -> None:
    x = np.array([[0.1], [0.2], [0.3], [0.7], [0.8], [0.9]])
    y = np.array([0, 0, 0, 1, 1, 1], dtype=float)
    assert gs.fit(x, y)[1] > 0
    assert gs.auc([0.7, 0.8], [0.1, 0.2]) == 1.0
    assert gs.auc([0.1], [0.7]) == 0.0
