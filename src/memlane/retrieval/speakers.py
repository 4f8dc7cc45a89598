"""The names of the two people talking in a dialogue store, read from how they address each other, and a query
with those names taken out.

In a long two-person conversation ("Where does Mina live now?") the question names one of the people talking,
while a captured turn carries no speaker: the hooks record a prompt and an answer, not who said it. The name
then matches only the turns that *address* that person ("Good. Mina, I need to ask about Japan."), which are
rarely the ones that answer, and it pulls the query's vector toward them. Every turn of the store is about the
two of them, so their names say nothing about which turn is meant: the query is searched with "they" in their
place (conversations: the evidence turn among the best 5 for dev 0.48 → 0.54 and test 0.44 → 0.54 of
questions).

A name is a word the store uses as a vocative: at the start of a turn or a sentence, after an optional greeting
("Hey Mel!", "MINA! Congratulations!", "Tom, that's huge") or closing a clause (", Mina."; ", Mel, that's"); in
Korean a name with the vocative ending at the start of a turn or sentence (민호야, 다은아). It must be used so
twice, never appear in lower case or after in, from, at or near (a place: "Denver, though…"), not be an
interjection (Congratulations, Anyway) or, in Korean, a verb stem (괜찮아 → 괜찮다), and not be written into
more than 40 % of the turns (a label a harness wrote, "Sofia: …", which matches that person's own turns). A
question may use a longer form of a name the people use with each other (Mel → Melanie): a capitalised query
word that begins with a name and is at most four letters longer counts as it.

Only for dialogue stores (``engine.store_is_dialogue``): a coding project's prompts address the agent ("Thanks,
Claude!") while its questions are about the things named. Built in the process that searches (the daemon), off
the hook path; the hooks' full-text fallback searches the query as it is. Stdlib only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from memlane.retrieval.cjk import final_consonant

MIN_USES = 2  # a vocative seen once may be a word at the start of a sentence ("Anyway, …")
LONGER_FORM = 4  # letters a question's form of a name may add (Mel → Melanie)
TURNS = 5_000  # the latest prompts and answers read for the names...
TURN_CHARS = 2_000  # ...each up to this long (people are addressed as a turn opens; a pasted log is not read)
LABEL_SHARE = 0.4  # a name in more of the turns than this is a label written into each of its speaker's turns

# Words that open a turn as a name would ("Congratulations!", "Anyway, …"), never taken for one.
_NOT_NAMES = frozenset({
    "Hey", "Hi", "Hello", "Oh", "Ah", "Aw", "Wow", "Thanks", "Congrats", "Congratulations", "Yes", "No", "Okay",
    "Ok", "Sorry", "Bye", "Dear", "Yay", "Haha", "Well", "So", "Anyway", "Why", "What", "How", "Who", "When",
    "Where", "Really", "Seriously", "Honestly", "Same", "Sure", "Right", "Please", "Cheers", "Welcome", "Wait",
    "Look", "Listen", "Hmm", "Ugh", "Yikes", "Nope", "Yeah", "Yep", "Great", "Nice", "Cool", "Amazing", "Awesome",
    "Perfect", "Exactly", "Totally", "Also",
})  # fmt: skip
_GREETING = (
    r"(?:(?:Hey|Hi|Hello|Oh|Ah|Aw+|Wow|Thanks|Thank you|Congrats|Congratulations|Good (?:morning|night|luck)"
    r"|Yes|No|Okay|OK|Ok|Sorry|Bye|Love you|Miss you|Dear|Yay|Ha+|Haha)[,!]?\s+)?"
)
_NAME = r"([A-Z][a-z]+|[A-Z]{3,})"
_OPENING = re.compile(r"(?:^|(?<=[.!?]\s))" + _GREETING + _NAME + r"\s*[,!?]")  # "Hey Mel!", "Tom, that's"
_CLOSING = re.compile(r",\s+" + _NAME + r"\s*(?:[.!?,]|$)")  # "Ice the ankle, Mina."
_WORD = re.compile(r"[A-Za-z]+")
_CONTENT = re.compile(r"\w+")
_PLACE = re.compile(r"\b(?:[Ii]n|[Ff]rom|[Aa]t|[Nn]ear) ([A-Z][a-z]+)\b")

# A Korean vocative: a two- or three-syllable name and 야 (after a vowel) or 아 (after a consonant), opening
# a turn or a sentence and followed by a space, punctuation or the end.
_KO_VOCATIVE = re.compile(r"(?:^|(?<=[.!?…]\s))([\uac00-\ud7a3]{2,3})([야아])(?=[\s,!.?…~]|$)")
# What follows a verb or adjective stem, never a name (괜찮다, 있어요, 좋지, 그렇게); not 네, which also
# follows a name (민호네 빵집, "Minho's bakery").
_KO_VERB_AFTER = "다요지게고서"
# Particles a Korean question glues to a name (민호가, 다은이는, 지수한테), longest first.
_KO_PARTICLES = (
    "이한테", "이랑", "이가", "이는", "이도", "이의", "이를", "한테서", "한테", "에게", "하고", "이",
    "가", "는", "은", "를", "을", "의", "랑", "와", "과", "도", "만",
)  # fmt: skip


class People:
    """The names a dialogue store's people are addressed by, and a query without them."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self._lower = {n.lower() for n in names}
        latin = [n for n in names if n.isascii()]
        # The name in any case (the store never writes it in lower case), a longer form of it capitalised.
        exact = "|".join(f"(?i:{re.escape(n)})" for n in latin)
        longer = "|".join(re.escape(n) + f"[a-z]{{1,{LONGER_FORM}}}" for n in latin)
        self._latin = re.compile(rf"\b(?:{exact}|{longer})\b") if latin else None
        hangul = sorted((n for n in names if not n.isascii()), key=len, reverse=True)
        particles = "|".join(_KO_PARTICLES)
        self._hangul = (
            re.compile(rf"(?<![\uac00-\ud7a3])(?:{'|'.join(hangul)})(?:{particles})?(?![\uac00-\ud7a3])\s*")
            if hangul
            else None
        )

    def __bool__(self) -> bool:
        return bool(self.names)

    def __repr__(self) -> str:
        return f"People({sorted(self.names)!r})"

    def without(self, query: str) -> str:
        """``query`` with the names taken out: "they" / "their" in English, nothing in Korean (the particle goes
        with the name)."""
        if self._latin is not None:
            query = self._latin.sub(lambda m: "their" if query[m.end() : m.end() + 2] == "'s" else "they", query)
            query = query.replace("their's", "their")
        if self._hangul is not None:
            query = self._hangul.sub("", query)
        return query.strip()

    def is_name(self, word: str) -> bool:
        """Whether ``word`` (any case) is one of the names."""
        return word.lower() in self._lower

    def searched(self, query: str) -> str:
        """``query`` without the names, or as it is when nothing but the names would be left ("Mina?": a search
        for everything about her)."""
        from memlane.store.fulltext import STOPWORDS

        rest = self.without(query)
        words = [w for w in _CONTENT.findall(rest) if w.lower() not in STOPWORDS and w not in ("they", "their")]
        return rest if words else query


def _addressed(text: str) -> Iterable[str]:
    """The names ``text`` addresses someone by."""
    for pattern in (_OPENING, _CLOSING):
        for m in pattern.finditer(text):
            yield m.group(1).capitalize()
    for m in _KO_VOCATIVE.finditer(text):
        stem, ending = m.groups()
        if bool(final_consonant(stem[-1])) == (ending == "아"):  # 야 after a vowel, 아 after a consonant
            yield stem


def names(texts: Iterable[str]) -> People:
    """The people the turns ``texts`` address by name."""
    uses: Counter[str] = Counter()
    turns_with: Counter[str] = Counter()  # capitalised words: how many turns hold each
    lower: set[str] = set()
    places: set[str] = set()
    korean: list[str] = []
    total = 0
    for text in texts:
        total += 1
        words = _WORD.findall(text)
        lower.update(w for w in words if w.islower())
        turns_with.update({w for w in words if w[0].isupper()})
        places.update(_PLACE.findall(text))
        uses.update(_addressed(text))
        if max(text, default="a") >= "\uac00":
            korean.append(text)
    hangul = "\n".join(korean)
    out = set()
    for name, n in uses.items():
        if n < MIN_USES or name in _NOT_NAMES:
            continue
        if name.isascii() and (name.lower() in lower or name in places):
            continue  # a word of the store, or a place ("Denver, though…" and "a job in Denver")
        if not name.isascii() and re.search(f"{name}[{_KO_VERB_AFTER}]", hangul):
            continue
        # A name in a good share of all turns is a label the harness writes ("Sofia: …"), which search matches.
        if name.isascii() and turns_with[name] > LABEL_SHARE * total:
            continue
        out.add(name)
    return People(frozenset(out))


def of_store(store: object) -> People | None:
    """The speakers of ``store``'s latest turns (on a connection of its own, so any thread may read them), or
    None for a store without a file of its own (PostgreSQL, an ephemeral store)."""
    file = getattr(store, "file", None)
    if not file or getattr(store, "ephemeral", False) or getattr(store, "backend", "sqlite") != "sqlite":
        return None
    from memlane.store import peek

    return names(peek.recent_turns(file, TURNS, TURN_CHARS))
