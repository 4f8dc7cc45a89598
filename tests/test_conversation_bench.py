"""The conversational benchmark (benchmarks/conversation.py): its corpus checks and a text-only run, no model.

The corpus is validated as committed (ids, evidence, paraphrase overlap, on-topic misses); the validator is
shown to catch each kind of mistake; a tiny conversation in the corpus format is evaluated with full-text
search only, where the right answers are known exactly; and one real conversation is built into a store
the way capture writes it and run through the command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "conversation"))

import conversation as bench  # noqa: E402
import validate  # noqa: E402


def test_the_committed_corpus_passes_its_checks() -> None:
    convs = validate.load()
    assert validate.check(convs) == []
    assert [c["split"] for c in convs].count("dev") == 4 and [c["split"] for c in convs].count("test") == 4
    assert sorted((c["split"], c["lang"]) for c in convs if c["lang"] == "ko") == [("dev", "ko"), ("test", "ko")]
    for c in convs:
        turns = sum(len(s["turns"]) for s in c["sessions"])
        assert 15 <= len(c["sessions"]) <= 25 and turns >= 240, c["id"]
        kinds = {q["kind"] for q in c["questions"]}
        assert kinds == set(validate.KINDS), c["id"]
        missing = sum(not q["answerable"] for q in c["questions"])
        assert 0.2 <= missing / len(c["questions"]) <= 0.3, c["id"]
    # cross-lingual rows: English about each Korean conversation, Korean about one English one per split
    cross = {(c["split"], c["lang"]) for c in convs for q in c["questions"] if q["lang"] != c["lang"]}
    assert cross == {("dev", "en"), ("dev", "ko"), ("test", "en"), ("test", "ko")}


def _tiny() -> dict[str, Any]:
    turn = lambda s, t, who, text: {"id": f"c1:s{s:02d}:t{t:02d}", "speaker": who, "text": text}  # noqa: E731
    return {
        "id": "c1",
        "split": "dev",
        "lang": "en",
        "speakers": {"A": "Ana", "B": "Ben"},
        "relation": "friends",
        "asked_at": "2023-03-01T10:00:00Z",
        "sessions": [
            {
                "id": "c1:s01",
                "date": "2023-01-10T19:00:00Z",
                "turns": [
                    turn(1, 1, "Ana", "We adopted a corgi puppy called Biscuit on Saturday."),
                    turn(1, 2, "Ben", "Congratulations! Corgis are wonderful dogs."),
                    turn(1, 3, "Ana", "I live in a small flat in Portland for now."),
                    turn(1, 4, "Ben", "Portland has great parks for walking a puppy."),
                ],
            },
            {
                "id": "c1:s02",
                "date": "2023-02-14T19:00:00Z",
                "turns": [
                    turn(2, 1, "Ana", "Big news: I signed a lease on a house in Denver with a yard."),
                    turn(2, 2, "Ben", "A yard in Denver! Biscuit will be thrilled."),
                    turn(2, 3, "Ana", "My sister Hana started as a nurse manager at a clinic in Tacoma."),
                    turn(2, 4, "Ben", "Tell Hana congratulations from me."),
                ],
            },
        ],
        "questions": [
            {
                "id": "c1:q01",
                "text": "What is the corgi puppy called?",
                "kind": "single",
                "answerable": True,
                "evidence": ["c1:s01:t01"],
                "stale": [],
                "lang": "en",
            },
            {
                "id": "c1:q02",
                "text": "Where did Ana sign a lease on a house?",
                "kind": "update",
                "answerable": True,
                "evidence": ["c1:s02:t01"],
                "stale": ["c1:s01:t03"],
                "lang": "en",
            },
            {
                "id": "c1:q03",
                "text": "What is the name of Hana's clinic in Tacoma?",
                "kind": "unanswerable",
                "answerable": False,
                "evidence": [],
                "stale": [],
                "lang": "en",
                "key": ["Hana", "clinic", "Tacoma"],
            },
        ],
    }


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda c: c["questions"][0].update(evidence=["c1:s09:t01"]), "no turn c1:s09:t01"),
        (lambda c: c["questions"][1].update(stale=["c1:s02:t01"]), "both evidence and stale"),
        # "called" shares its stem with the evidence turn's "called": not a paraphrase
        (lambda c: c["questions"][0].update(kind="paraphrase"), "paraphrase shares ['call', 'corgi', 'puppi']"),
        (lambda c: c["questions"][2].update(key=["Hana", "salary"]), "key term 'salary' is not in the conversation"),
        (lambda c: c["questions"][2].update(evidence=["c1:s01:t01"]), "unanswerable with evidence"),
        (lambda c: c["questions"][1].update(kind="single"), "stale turns on a single question"),
        (lambda c: c["sessions"][1]["turns"][0].update(id="c1:s01:t01"), "turn id c1:s01:t01 repeated"),
    ],
)
def test_the_validator_catches_each_kind_of_mistake(change: Any, problem: str) -> None:
    conv = _tiny()
    assert validate.check([conv]) == []
    change(conv)
    assert any(problem in p for p in validate.check([conv])), validate.check([conv])


def test_stems_and_korean_words() -> None:
    assert validate.stem_en("running") == validate.stem_en("run")
    assert validate.stem_en("slides") == validate.stem_en("slide")
    assert validate.stem_en("tried") == validate.stem_en("try")
    # a particle is not a word of its own: 콩이가 / 콩이는 are one word; question words are stop words
    assert validate.content_words("콩이가 뭐야?") == validate.content_words("콩이는") == {"ko:콩이"}


def _run_tiny(tmp_path: Path) -> list[dict[str, Any]]:
    data = tmp_path / "data"
    data.mkdir()
    (data / "c1.json").write_text(json.dumps(_tiny()), encoding="utf-8")
    convs = bench.conversations("dev", data)
    assert [c.id for c in convs] == ["c1"] and bench.conversations("test", data) == []
    return bench.evaluate("dev", "text", convs=convs, quiet=True)


def test_a_tiny_conversation_scores_exactly_with_full_text(tmp_path: Path) -> None:
    records = _run_tiny(tmp_path)
    assert [r["id"] for r in records] == ["c1:q01", "c1:q02", "c1:q03"]
    first = records[0]
    assert first["hits"][0]["turn"] == "c1:s01:t01", "the only turn naming the corgi puppy ranks first"
    assert first["bm25"][0] == first["fts"][0] == "c1:s01:t01"
    assert first["text"] == "What is the corgi puppy called?", "the record keeps the question"
    assert set(first["evidence_events"]) == {h["event"] for h in first["hits"] if h["turn"] == "c1:s01:t01"}
    table = bench.summary(records)["dev"]
    assert table["all"]["r@5"] == table["all"]["r@10"] == table["all"]["s@10"] == 1.0
    assert table["all"]["answerable"] == 2 and table["unanswerable"]["n"] == 1
    assert table["update"]["updates"] == 1
    # the selection is today's hook decision: whatever it chose is counted consistently
    chosen = [t for r in records for t in bench.injected(r)]
    good = [t for r in records[:2] for t in bench.injected(r) if t in r["evidence"]]
    shown = [t for r in records[:2] for t in bench.injected(r)]
    assert table["all"]["mem/q"] == pytest.approx(len(chosen) / 3)
    assert table["all"]["precision"] == (len(good) / len(shown) if shown else None)
    assert table["all"]["silent"] == float(not bench.injected(records[2]))


def test_another_selection_is_measured_on_the_same_records(tmp_path: Path) -> None:
    """``evaluate(inject=…)`` takes another decision (here: the top hit of the hook's search as a "full" tier
    and nothing else), as the lead's two-tier selection will plug in."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "c1.json").write_text(json.dumps(_tiny()), encoding="utf-8")

    def top_one(engine: Any, memory: Any, query: str) -> dict[str, list[Any]]:
        return {"full": engine.search(memory, query, limit=1, current_first=False), "index": []}

    records = bench.evaluate("dev", "text", convs=bench.conversations("dev", data), inject=top_one, quiet=True)
    assert all(set(r["selection"]) == {"full", "index"} for r in records)
    assert bench.metrics(records, "full")["injected"] == 1.0
    assert bench.metrics(records, "full")["silent"] == 0.0
    assert bench.metrics(records, ("full", "index")) == bench.metrics(records, "full")
    assert bench.metrics(records, "index")["injected"] == 0.0


def test_a_real_conversation_is_stored_as_capture_writes_it(tmp_path: Path) -> None:
    from memlane import config

    conv = next(c for c in bench.conversations("test") if c.id == "c7")
    memory, event_of = bench.build(conv, tmp_path / "w", config.load(), embed=False)
    try:
        events = {e.id: e for e in memory.store.iter_events()}
        turns = list(conv.turns())
        assert len(events) == len(event_of) == len(turns)
        for session, n, turn in turns[:40]:
            event = events[event_of[turn["id"]]]
            assert event.content == turn["text"]
            assert event.type == ("user_prompt" if turn["speaker"] == conv.speakers["A"] else "agent_response")
            assert event.session_id == session["id"].replace(":", "-")
            assert event.ts[:16] == bench._ts(session["date"], n)[:16]
        assert len({e.session_id for e in events.values()}) == len(conv.sessions)
    finally:
        memory.close()


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src"), "MEMLANE_HOME": str(home), "HOME": str(home)}
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "conversation.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_command_line_runs_one_conversation_text_only(tmp_path: Path) -> None:
    done = run_cli("--split", "test", "--mode", "text", "--conversation", "c7", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    table = json.loads(done.stdout)
    assert set(table) == {"test"}
    row = table["test"]["all"]
    assert row["n"] == 52 and row["answerable"] == 39 and row["unanswerable"] == 13
    assert 0 < row["r@10"] <= 1 and row["bm25@5"] <= 1
    assert table["test"]["paraphrase"]["text@5"] == 0.0, "full text cannot find a question that shares no word"


def test_a_bad_conversation_id_is_a_one_line_error(tmp_path: Path) -> None:
    done = run_cli("--split", "dev", "--mode", "text", "--conversation", "c99", home=tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip() == "no conversation c99 in split dev"


def test_another_writers_questions_pass_the_checks() -> None:
    """``conversation/other/cN.json`` (corpus conversation-other of benchmarks/injection.py): another writer's
    questions about the English dialogues of both splits, held to the corpus's checks (their unanswerable
    questions carry no key terms)."""
    other = bench.OTHER
    convs = []
    for c in validate.load():
        if (other / f"{c['id']}.json").exists():
            convs.append({**c, "questions": json.loads((other / f"{c['id']}.json").read_text(encoding="utf-8"))})
    assert {c["id"] for c in convs} == {"c1", "c2", "c3", "c5", "c6", "c7"}
    assert [p for p in validate.check(convs) if "without key terms" not in p] == []
    for c in convs:
        assert all(q["id"].startswith(f"{c['id']}:o") for q in c["questions"]), c["id"]
        assert any(not q["answerable"] for q in c["questions"]) and any(q["kind"] == "multi" for q in c["questions"])
    assert [c.id for c in bench.conversations("test", other=True)] == ["c5", "c6", "c7"]
