"""The LongMemEval benchmark's own machinery on a tiny haystack in its format: the CI-sized check.

The real data (``../shared/data/longmemeval``) is not part of the repository; this builds three
questions in the same format, with one where the answer is deliberately out of reach, so the metrics
are known exactly and a broken metric or a broken retrieval path fails here.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILLER = [
    ("Can you explain how tides work?", "Tides come from the moon's gravity pulling on the oceans."),
    ("What is a good stretch for the lower back?", "Try the cat-cow stretch, slowly, ten times."),
    ("Suggest a name for a grey cat.", "Pebble, Smokey or Ash are all nice names for a grey cat."),
    ("How long should I boil an egg?", "About nine minutes for a firm yolk."),
]


def session(user: str, assistant: str, answer: bool = False) -> list[dict[str, Any]]:
    turn = {"role": "user", "content": user}
    if answer:
        turn["has_answer"] = True
    return [turn, {"role": "assistant", "content": assistant}]


def question(qid: str, text: str, evidence: tuple[str, str] | None, evidence_found: bool) -> dict[str, Any]:
    sessions = [session(u, a) for u, a in FILLER]
    ids = [f"{qid}-filler-{i}" for i in range(len(FILLER))]
    answer_ids = []
    if evidence is not None:
        sessions.insert(2, session(*evidence, answer=evidence_found))
        ids.insert(2, f"{qid}-answer")
        answer_ids = [f"{qid}-answer"] if evidence_found else [f"{qid}-missing"]
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": text,
        "question_date": "2023/05/30 (Tue) 10:00",
        "answer": "-",
        "answer_session_ids": answer_ids,
        "haystack_dates": [f"2023/05/{10 + i:02d} (Wed) 09:00" for i in range(len(sessions))],
        "haystack_session_ids": ids,
        "haystack_sessions": sessions,
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    questions = [
        question(
            "q-guitar",
            "Where did I get my guitar serviced?",
            ("I got my guitar serviced at Rhythm Central on Main St last week.", "Glad the guitar sounds good."),
            True,
        ),
        question(
            "q-flight",
            "Which airline did I fly to Lisbon with?",
            ("My flight to Lisbon with TAP Air Portugal was delayed two hours.", "Sorry about the delay."),
            True,
        ),
        # The labelled answer session is not in the haystack at all: every metric must count it as a miss.
        question("q-missing", "What colour is my bicycle?", ("I like green tea.", "Green tea is nice."), False),
        question("q-none_abs", "What is my dog's name?", None, False),  # abstention: left out of the metrics
    ]
    path = tmp_path / "tiny.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(questions, fh)
    return path


def run(data: Path, *args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "longmemeval.py"), "--data", str(data), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    assert "3 non-abstention questions" in out
    return {
        line.split()[0]: float(line.split()[1]) for line in out.splitlines() if line.startswith("  ") and "@" in line
    }


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_tiny_haystack_scores_exactly(data: Path, mode: str, tmp_path: Path) -> None:
    metrics = run(data, "--mode", mode, "--cache", str(tmp_path / "cache"))
    if mode == "hybrid":
        assert len(list((tmp_path / "cache").glob("*.npy"))) == 3, "vectors kept per question"
        assert run(data, "--mode", mode, "--cache", str(tmp_path / "cache")) == metrics
    # Two of three questions are answerable and are found at rank 1; the third counts as a miss.
    assert metrics["recall_any@5"] == pytest.approx(2 / 3, abs=1e-3)
    assert metrics["recall_all@5"] == pytest.approx(2 / 3, abs=1e-3)
    assert metrics["ndcg@10"] == pytest.approx(2 / 3, abs=1e-3)
    # Turn recall is over questions with labelled evidence turns: the two answerable ones.
    assert metrics["turn_recall_any@10"] == 1.0


def test_limit_and_stride_pick_a_subset(data: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "longmemeval.py"),
            "--data",
            str(data),
            "--mode",
            "text",
            "--stride",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    assert "2 non-abstention questions" in out
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "longmemeval.py"), "--data", str(data.with_name("nope.gz"))],
            capture_output=True,
            check=True,
        )
