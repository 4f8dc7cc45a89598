"""How events are cut into passages to embed: windows for every event, sentences for prompts."""

from __future__ import annotations

from memlane.embed import passages


class Windows:
    """The window side of an embedder: one chunk per 40 characters (enough to see the order)."""

    def chunk(self, text: str) -> list[str]:
        return [text[i : i + 40] for i in range(0, len(text), 40)]


def test_sentences_split_and_merge_short_fragments() -> None:
    text = "Hi! Can you suggest BBQ sauce recipes?\nBy the way, I just got a smoker today. Thanks a lot."
    assert passages.sentences(text) == [
        "Hi! Can you suggest BBQ sauce recipes?",
        "By the way, I just got a smoker today. Thanks a lot.",
    ]


def test_cjk_full_stops_end_sentences() -> None:
    text = "数据库连接池在负载下超时了怎么办。顺便说一下，我今天买了一个烟熏炉！好的。"
    first, second = "数据库连接池在负载下超时了怎么办。", "顺便说一下，我今天买了一个烟熏炉！ 好的。"
    assert passages.sentences(text) == [first, second], "the two-character 好的 joins its neighbour"


def test_one_sentence_has_no_sentence_passages() -> None:
    assert passages.sentences("Please make the login page accept SSO via Okta") == []
    assert passages.sentences("Fix it. Now.") == []  # fragments merge into one sentence
    assert passages.sentences("") == []


def test_pastes_are_left_to_the_windows() -> None:
    lines = "\n".join(f"E   frame {i} in shop/db/pool_manager.py" for i in range(40))
    assert len(passages.sentences(lines)) == passages.MAX_SENTENCES
    long = "word " * 200
    assert passages.sentences(f"{long}. A short real sentence here.") == ["A short real sentence here."]


def test_only_prompts_get_sentence_passages_after_their_windows() -> None:
    text = "Why does the pool time out under load? The tests pass locally but CI fails every time."
    windows = Windows().chunk(text)
    assert passages.passages("agent_response", text, Windows()) == windows
    assert passages.passages("user_prompt", text, Windows()) == windows + passages.sentences(text)
    assert len(passages.sentences(text)) == 2
