"""What a prompt gets from the ranked hits: two tiers, and stale memories left out of both.

- **Full** (``high``): memories whose score stands clearly above the query's background
  (``scoring.tier``) are injected in full, up to ``injection.max_results``, the count following
  confidence (a further one needs ``inject_relative`` of the best score).
- **Index** (``suggested``): the next memories that stand above the background are offered as one
  line each — citation, type, time and a gist — up to ``injection.index_max`` lines within
  ``injection.index_tokens``. A wrong line costs a few tokens; a missing right one costs the answer.
- A memory a later edit replaced is in neither tier (``drop_replaced``); its replacement takes its place.

Shared by every path that injects (the daemon, the hooks' full-text fallback, the benchmarks), so
they cannot disagree; search orders stale memories by the same rule (``current_first``). Stdlib
only: the hooks import it.
"""

from __future__ import annotations

import re

from memlane.logs import log
from memlane.retrieval import resolved

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a hook ~1 ms to import: annotations only
    from collections.abc import Sequence
    from typing import Any

    from memlane.config import Config
    from memlane.retrieval.hybrid import Hit
    from memlane.store.db import Event

CHARS_PER_TOKEN = 4  # as progressive disclosure counts; a CJK character counts as a token of its own
WIDE_FROM = 0x1100  # the first wide character (Hangul Jamo): nothing before it takes two columns


def tokens(text: str) -> int:
    """About how many tokens ``text`` costs the model: 4 characters a token, a CJK character one."""
    wide = sum(1 for ch in text if ord(ch) >= WIDE_FROM)
    return (len(text) - wide + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + wide


class Item:
    """One memory of the full tier: the matching events of one exchange (a prompt and what followed it),
    led by its answer when that is among them, with the prompt that asked when the prompt is not."""

    __slots__ = ("asked", "hits")

    def __init__(self, hits: list[Hit], asked: Event | None = None) -> None:
        self.hits = hits
        self.asked = asked

    @property
    def lead(self) -> Hit:
        return self.hits[0]


class Injection:
    """What one prompt is given: ``items`` (the full tier, one exchange each), ``index`` (one line each, to
    open on demand), and ``left_out``: the candidates considered and why each was not shown."""

    __slots__ = ("index", "items", "left_out")

    def __init__(
        self,
        items: list[Item] | None = None,
        index: list[Hit] | None = None,
        left_out: list[tuple[Hit, str]] | None = None,
    ) -> None:
        self.items = items or []
        self.index = index or []
        self.left_out = left_out or []

    def __bool__(self) -> bool:
        return bool(self.items or self.index)

    @property
    def full(self) -> list[Hit]:
        """Every memory of the full tier, item by item."""
        return [h for item in self.items for h in item.hits]

    @property
    def hits(self) -> list[Hit]:
        return self.full + self.index

    def record(self, mode: str) -> dict[str, Any]:
        """The injection log's row: ids, citations and scores, never content."""

        def row(h: Hit, reason: str = "") -> dict[str, Any]:
            out = {"id": h.event.id, "cite": h.event.cite, "score": round(h.score, 4), "confidence": h.confidence}
            if "lift" in h.sources:
                out["lift"] = round(h.sources["lift"], 3)
            if reason:
                out["reason"] = reason
            return out

        return {
            "mode": mode,
            "full": [{**row(h), "item": n} for n, item in enumerate(self.items) for h in item.hits],
            "index": [row(h) for h in self.index],
            "left_out": [row(h, why) for h, why in self.left_out],
        }


def choose(
    hits: list[Hit], index: Any, cfg: Config, store: Any = None, history: bool = False, wants: str | None = None
) -> Injection:
    """The two tiers for a prompt's hits (best first), without memories a later edit replaced.

    With ``store``, a replaced answer takes the prompt that asked for it along, and the edit that
    replaced a chosen memory is looked up even when it is not among the hits (``drop_replaced``); the
    full tier is grouped by exchange (``items``). With ``history`` (a question about what happened, in a store
    of dialogue: ``engine.Engine.relevant``) an older memory on the subject of a newer one is not taken for a
    stale one: "Where did Mina sprain her ankle?" wants the sprain, not the later turn about her knee.
    """
    similarity = 0.0 if history else cfg.retrieval.supersede_similarity
    considered = list(hits)
    kept = drop_replaced(hits, store)
    full = full_tier(kept, cfg)
    if store is not None and kept and (edits := later_edits(full or kept[: cfg.injection.index_max], store)):
        kept = drop_replaced(kept, store, edits)
        full = full_tier(kept, cfg)
    # Repeats go last: a prompt's vector, repeated in its session's summary, is what tells the
    # supersession check that an older memory is on its subject; dropped earlier, it let superseded
    # answers through.
    first = full
    read_cjk = index is not None and vectors_read_cjk(cfg)
    current = supersede(full, index, similarity, read_cjk)
    older = {h.event.id for h in first} - {h.event.id for h in current}
    full = drop_repeated(current)
    items = group(full, store, cfg.injection.max_results)
    if index is not None:  # only with vectors, as the lines below
        items = answered_items(items, question_replies(full, store, cfg))
    items, over = per_session(items, cfg.retrieval.session_items)
    items, unfit = fitting(items, wants)
    demoted = {h.event.id for item in over for h in item.hits}
    lacking = {h.event.id for item in unfit for h in item.hits}
    over += unfit
    full = [h for item in items for h in item.hits]
    # A memory the full tier dropped as older on the same subject, or as a repeat, is not offered as a line; an
    # item over its session's count is, by its lead (one line for the exchange: with a line each for its prompt
    # and answer, LongMemEval-S dev lost an answer to the token budget).
    kept_ids = {h.event.id for h in kept}  # a reply that leads an item is not a candidate: the question is
    offered = {next((h.event.id for h in item.hits if h.event.id in kept_ids), "") for item in over}
    rest = [h for h in kept if h not in first or h.event.id in offered]
    lines, replies = index_lines(rest, full, items, index, store, cfg, older, similarity, read_cjk)
    unlisted: set[str] = set()
    if not cites_in_context(cfg):  # an index line is only its citation to open: none without citations
        unlisted = {h.event.id for h in lines}
        lines = []
    shown = {h.event.id for h in full + lines}
    answered = {q for q, reply in replies.items() if reply.id in shown | _shown(items)}
    left_out = [
        (h, "no index tier without citations (citations.include_in_context)" if h.event.id in unlisted
         else "a short question: its reply is shown instead" if h.event.id in answered
         else f"holds no {wants} the question asks for" if h.event.id in lacking
         else _why(h, kept_ids, older, demoted))
        for h in considered if h.event.id not in shown
    ]  # fmt: skip
    return Injection(items, lines, left_out)


def index_lines(
    rest: list[Hit],
    full: list[Hit],
    items: list[Item],
    index: Any,
    store: Any,
    cfg: Config,
    older: set[str],
    similarity: float,
    read_cjk: bool = False,
) -> tuple[list[Hit], dict[str, Event]]:
    """The index tier's lines from ``rest`` (best first), and the replies shown for short questions among them.

    The lines are taken (``index_tier``), the similarity rule (at ``similarity``; 0: off) leaves out an older
    memory on the subject of a shown newer one (conversation dev: stale answers shown alone 8 → 4, evidence
    reachable 0.39 → 0.36; replay as before; its ids are added to ``older``), and a short question shows its
    reply (``answered_lines``). A line those rules free — a question whose reply is a line already, a memory
    older than another — is given to the next candidate, until the count or the token budget is reached.
    """
    icfg = cfg.injection
    lines: list[Hit] = []
    replies: dict[str, Event] = {}
    pending = list(rest)
    while pending and len(lines) < icfg.index_max:
        batch = index_tier(pending, full + lines, cfg)[: icfg.index_max - len(lines)]
        if not batch:
            break
        pending = pending[pending.index(batch[-1]) + 1 :]
        # A later line keeps the earlier ones: only those it brings can be older.
        survivors = {h.event.id for h in supersede(full + lines + batch, index, similarity, read_cjk)}
        older |= {h.event.id for h in batch if h.event.id not in survivors}
        batch = [h for h in batch if h.event.id in survivors]
        # Only with vectors: the similarity rule is what keeps a stale reply out (the hooks' full-text fallback,
        # without it: stale answers shown alone on the conversations 6 -> 8 of test).
        if index is not None:
            replies.update(question_replies(batch, store, cfg))
        lines, spent = answered_lines(lines + batch, items, replies, cfg)
        if spent:  # the token budget is reached: no further line fits
            break
    return lines, replies


def fitting(items: list[Item], wants: str | None) -> tuple[list[Item], list[Item]]:
    """The items that hold what the question asks for (``answers.holds``: a time, a number) and those that do not;
    all of them fit when it asks for no kind (``wants`` None)."""
    if wants is None:
        return items, []
    from memlane.retrieval import answers

    fit: list[Item] = []
    unfit: list[Item] = []
    for item in items:
        texts = [h.event.content for h in item.hits] + ([item.asked.content] if item.asked else [])
        (fit if any(answers.holds(wants, text) for text in texts) else unfit).append(item)
    return fit, unfit


def per_session(items: list[Item], most: int) -> tuple[list[Item], list[Item]]:
    """At most ``most`` items (best first) from one session (0: no limit), and the items over that count."""
    if most <= 0:
        return items, []
    kept: list[Item] = []
    over: list[Item] = []
    count: dict[str, int] = {}
    for item in items:
        session = item.lead.event.session_id
        if count.get(session, 0) >= most:
            over.append(item)
            continue
        count[session] = count.get(session, 0) + 1
        kept.append(item)
    return kept, over


def cites_in_context(cfg: Config) -> bool:
    """Whether injected memories carry their citations (``citations.enabled`` and ``include_in_context``)."""
    return bool(cfg.citations.enabled and cfg.citations.include_in_context)


def group(full: list[Hit], store: Any, most: int) -> list[Item]:
    """The full tier's memories as items, one per exchange, in order of each exchange's best memory, at most
    ``most``; an item is led by its answer (agent response, summary) when it has one. Without a store every
    memory is its own item."""
    prompts: dict[str, Event] = {}
    if store is not None and full:
        try:
            prompts = store.exchange_prompts([h.event for h in full if h.event.type != "user_prompt"])
        except Exception as exc:  # noqa: BLE001 - a failed read must not stop the injection
            log("retrieval", "warning", f"exchange lookup skipped: {exc!r}")
    members: dict[str, list[Hit]] = {}
    for h in full:
        key = prompts[h.event.id].id if h.event.id in prompts else h.event.id
        members.setdefault(key, []).append(h)
    items = []
    for hs in list(members.values())[:most]:
        hs.sort(key=lambda h: (h.event.type not in ANSWERS, -h.score))
        in_item = {h.event.id for h in hs}
        asked = next((prompts[h.event.id] for h in hs if h.event.id in prompts), None)
        items.append(Item(hs, asked if asked is not None and asked.id not in in_item else None))
    return items


def _why(hit: Hit, kept: set[str], older: set[str], demoted: set[str]) -> str:
    if hit.event.id not in kept:
        return "replaced by a later edit"
    if hit.event.id in older:
        return "older than a memory shown on the same subject"
    if hit.event.id in demoted:
        return "its session has an item in full already"
    if hit.confidence == "none":
        return "below the index tier"
    if hit.confidence == "superseded":
        return "superseded"
    return "over the count or budget, or repeated"


def vectors_read_cjk(cfg: Config) -> bool:
    """Whether the model's vectors of Korean, Chinese and Japanese text say what it is about: a multilingual
    model, or ``retrieval.cjk_vectors`` (the user says so)."""
    from memlane.embed import is_multilingual

    return bool(cfg.retrieval.cjk_vectors or is_multilingual(cfg.embedding))


def select_for_injection(hits: list[Hit], index: Any, cfg: Config, store: Any = None) -> list[Hit]:
    """The memories of both tiers (full first): what a prompt is shown."""
    return choose(hits, index, cfg, store).hits


def by_support(hits: list[Hit], n: int) -> list[Hit]:
    """The ``n`` hits with the highest P, for the tiers.

    Search order lets a session's or exchange's support lift a result only a little
    (``retrieval.support_margin``), so it keeps lexical evidence first; P keeps the whole lift, and
    the answer of an exchange whose tool output matched a pasted error is what a prompt wants
    injected even when it shares no word with it (coding replay dev: 0.711 → 0.737 answers injected).
    """
    return sorted(hits, key=lambda h: -h.score)[:n]


def full_tier(hits: list[Hit], cfg: Config) -> list[Hit]:
    """The memories injected whole: 'high', close to the best one, at most ``injection.max_results``.

    The count follows confidence: one strong memory is injected alone rather than padded with weak
    ones (a further hit needs ``inject_relative`` of the best score), except that a chosen session
    without an answer among the chosen brings its best 'high' answer along (``with_answers``).
    """
    most = cfg.injection.max_results
    passed = [h for h in hits if h.confidence == "high"]
    if not passed or most <= 0:
        return []
    best = max(h.score for h in passed)
    # Not one per session: tried, and a session's best-ranked event is often its summary or prompt
    # rather than the answer itself (coding replay dev: 0.61 → 0.47 of answers injected). One per
    # exchange, with the answer added, kept every answer on the replay but lost the user's own turn
    # beside the assistant's reply on LongMemEval (dev, every 5th: evidence injected 0.750 → 0.643).
    chosen = [h for h in passed if h.score >= cfg.retrieval.inject_relative * best][: most * 3]
    # An answer that stands out of the background completes its session's item, even if only 'suggested'.
    answers = [h for h in hits if h.confidence in ("high", "suggested")]
    return with_answers(chosen, answers, most * 3)  # ``group`` keeps ``most`` exchanges


def index_tier(rest: list[Hit], full: list[Hit], cfg: Config) -> list[Hit]:
    """The index lines: the best of ``rest`` that stand above the background, within the line count and the
    token budget, leaving out a memory whose whole text a full memory already says."""
    icfg = cfg.injection
    said = [_flat(h.event.content) for h in full]
    lines: list[Hit] = []
    spent = 0
    for h in rest:
        if len(lines) >= icfg.index_max:
            break
        if h.confidence not in ("high", "suggested"):
            continue
        text = _flat(h.event.content)
        if any(text in other for other in said):
            continue
        cost = tokens(index_line(h.event, icfg.gist_chars))
        if spent + cost > icfg.index_tokens:
            break
        lines.append(h)
        said.append(text)
        spent += cost
    return lines


QUESTION_MARKS = ("?", "？")


# A question this short only asks ("Do you have a call sign now?"); a longer one says something of its own. Not
# the gist's length: at 50 characters, questions of 50-90 lost their replies (conversations dev 0.63 → 0.62).
SHORT_QUESTION_CHARS = 90


def short_question(event: Event) -> bool:
    """A prompt or answer that only asks: it ends with a question mark and is at most ``SHORT_QUESTION_CHARS``."""
    if event.type not in ("user_prompt", "agent_response"):
        return False
    text = _flat(event.content)
    return len(text) <= SHORT_QUESTION_CHARS and text.endswith(QUESTION_MARKS)


def answered_items(items: list[Item], replies: dict[str, Event]) -> list[Item]:
    """Each full item that holds a short question is led by the question's reply (``question_replies``), with
    the question's score, unless the reply is shown already (conversations: full-tier precision 0.37 -> 0.42
    on dev, 0.33 -> 0.42 on test)."""
    shown = _shown(items)
    for item in items:
        for h in list(item.hits):
            reply = replies.get(h.event.id)
            if reply is not None and reply.id not in shown:
                item.hits.insert(0, _in_place(h, reply))
                shown.add(reply.id)
    return items


def _in_place(question: Hit, reply: Event) -> Hit:
    """The reply, shown where its question would be: with the question's score and tier."""
    return type(question)(reply, question.score, question.sources, question.confidence)


def _shown(items: list[Item]) -> set[str]:
    """The ids the full tier shows: its memories and the prompts shown beside them."""
    return {h.event.id for item in items for h in item.hits} | {item.asked.id for item in items if item.asked}


def answered_lines(
    lines: list[Hit], items: list[Item], replies: dict[str, Event], cfg: Config
) -> tuple[list[Hit], bool]:
    """``lines`` with each short question in ``replies`` shown as its reply, in its place and with its score
    (``question_replies``); a question whose reply is shown already is left out, and the lines stay within
    ``injection.index_tokens`` (True: a line was cut by it). Applied after the similarity rule, which the
    question passed: the reply is offered on the question's match (with the English model, any two Korean texts
    look alike to that rule)."""
    shown = _shown(items) | {h.event.id for h in lines}
    out: list[Hit] = []
    spent = 0
    for h in lines:
        reply = replies.get(h.event.id)
        if reply is not None:
            if reply.id in shown:
                continue
            h = _in_place(h, reply)
            shown.add(reply.id)
        cost = tokens(index_line(h.event, cfg.injection.gist_chars))
        if spent + cost > cfg.injection.index_tokens:
            return out, True
        out.append(h)
        spent += cost
    return out, False


def question_replies(hits: list[Hit], store: Any, cfg: Config) -> dict[str, Event]:
    """The replies (``store.replies``) of the short questions among ``hits`` that could be index lines, keyed by
    question id: a prompt's is its exchange's last answer, an answer's the prompt that answered it.

    In a dialogue the question is often what matches ("So when is the surgery now?") while the answer is the
    turn after it ("June 6. She wants me on the new pills first."), which shares no word with the prompt. A
    question whose whole text fits its line says nothing its reply does not, so its line shows the reply
    (conversations dev: evidence reachable 0.43 -> 0.50, stale answers shown alone 4 -> 3). A longer turn
    that ends with a question keeps its own line: it carries facts of its own (LongMemEval's user turns
    "I bought ... can you recommend ...?": reachable 0.83 -> 0.72 when questions up to 250 characters gave
    way to their replies).
    """
    asks = [h.event for h in hits if h.confidence in ("high", "suggested") and short_question(h.event)]
    if store is None or not asks:
        return {}
    try:
        replies = store.replies(asks)
    except Exception as exc:  # noqa: BLE001 - a failed read must not stop the injection
        log("retrieval", "warning", f"reply lookup skipped: {exc!r}")
        return {}
    # "Want me to add a test for the empty cart?" is a better line than its reply "yes please": a reply
    # shorter than half its question is an acknowledgement, not an answer (the conversations lose nothing).
    asked = {e.id: len(_flat(e.content)) for e in asks}
    return {q: r for q, r in replies.items() if 2 * len(_flat(r.content)) >= asked[q]}


def _flat(text: str) -> str:
    """``text`` on one line, its runs of whitespace one space each."""
    return " ".join(text.split())


_FOCUS_WORD = re.compile(r"[^\W_][\w.-]*[^\W_]")
FOCUS_LEAD = 20  # how far before the prompt's word a gist may open, at a clause break
MAX_FOCUS_HITS = 64  # occurrences of the prompt's words looked at in one memory


def focus_words(prompt: str) -> tuple[str, ...]:
    """The words of ``prompt`` a gist is centred on: three letters or more, no stop words, lower case; Korean
    words of two syllables or more without their particle."""
    from memlane.retrieval.cjk import content_word, has_hangul
    from memlane.store.fulltext import STOPWORDS

    words = {w.lower() for w in _FOCUS_WORD.findall(prompt[:2000])}
    out = {w for w in words if len(w) >= 3 and w not in STOPWORDS and not has_hangul(w[-1])}
    # A Korean word without its particle (두부가 → 두부), which a memory glues another one to (두부는).
    out.update(stem for w in words if has_hangul(w[-1]) and len(stem := content_word(w)) >= 2)
    return tuple(sorted(out))


def gist(text: str, limit: int, focus: Sequence[str] = ()) -> str:
    """``text`` on one line, cut to ``limit`` columns (a Korean, Chinese or Japanese character takes two). With
    ``focus`` (the prompt's words), a long text whose first such word comes after the cut is shown from a little
    before that word, so the line shows why it matched: "…the pool is pool_size=20, max_overflow=10…" rather
    than the start of a long answer."""
    line = _flat(text)
    limit = _in_characters(line, limit)
    if len(line) <= limit:
        return line
    start = _focus_start(line, focus, limit)
    if start == 0:
        return line[: limit - 1] + "…"
    rest = line[start:]
    return "…" + (rest if len(rest) <= limit - 1 else rest[: limit - 2] + "…")


def _in_characters(line: str, columns: int) -> int:
    """How many characters of ``line`` make ``columns`` columns, on average over the line: a wide character (East
    Asian width W or F: Hangul, Han, kana) takes two columns, as in a terminal, and costs a token where four
    Latin letters do (``tokens``). A Korean gist of 50 characters cost three English ones' tokens, so a Korean
    memory's line crowded out the next candidate's (conversations' Korean questions: dev 0.45 -> 0.48, test 0.44
    -> 0.47)."""
    if not any(ord(ch) >= WIDE_FROM for ch in line):
        return columns
    import unicodedata  # only for such a line: the hooks' full-text fallback imports this module

    wide = sum(1 for ch in line if ord(ch) >= WIDE_FROM and unicodedata.east_asian_width(ch) in "WF")
    if not wide:
        return columns
    return max(1, columns * len(line) // (len(line) + wide))


def _focus_start(line: str, focus: Sequence[str], limit: int) -> int:
    """Where the gist of ``line`` starts: the window of ``limit`` characters that holds most of ``focus`` (by their
    letters: pool_size counts more than pool), opened at a word boundary ``FOCUS_LEAD`` characters before one of
    them; 0 when the start of the line holds as much."""
    if not focus:
        return 0
    lower = line.lower()
    found = [(at, word) for word in focus for at in _word_starts(lower, word)][:MAX_FOCUS_HITS]
    if not found:
        return 0

    def held(start: int) -> int:
        end = start + limit - 2  # room left by the ellipses
        return sum(len(word) for word in {w for at, w in found if start <= at and at + len(w) <= end})

    best, most = 0, held(0)
    for at, _ in sorted(found):
        if (count := held(start := _opening(line, at))) > most:
            best, most = start, count
    return best


_CLAUSE = re.compile(r"[.:;,!?)\]]\s")


def _opening(line: str, at: int) -> int:
    """Where a gist that shows the word at ``at`` opens: after the last clause break (". ", ": ", ", ") at most
    ``FOCUS_LEAD`` characters before it, else at the word itself ("…connection timed out", not "…0 reached,
    connection timed out") or the start of the token it is part of ("…tests/test_pool.py", not "…pool.py")."""
    lead = max(0, at - FOCUS_LEAD)
    breaks = [m.end() for m in _CLAUSE.finditer(line, lead, at)]
    if breaks:
        return breaks[-1]
    token = line.rfind(" ", lead, at) + 1  # the word inside a longer token (test_pool.py): the token's start
    return token if token > 0 else at


_INFLECTIONS = ("", "s", "es", "ed", "d", "ing")


def _word_starts(text: str, word: str) -> list[int]:
    """Where ``word`` is a word of ``text``, or one with an inflection ("pool" in "pools" and "pooled"; not in
    "spool", and "head" not in "header")."""
    from memlane.retrieval.cjk import has_hangul

    korean = has_hangul(word[-1])  # a Korean word takes any particle or ending after it (두부는, 병원에서)
    out: list[int] = []
    at = text.find(word)
    while at >= 0 and len(out) < MAX_FOCUS_HITS:
        end = at + len(word)
        tail = end
        while tail < len(text) and text[tail].isalnum():
            tail += 1
        if (at == 0 or not text[at - 1].isalnum()) and (korean or text[end:tail] in _INFLECTIONS):
            out.append(at)
        at = text.find(word, at + 1)
    return out


def index_line(event: Event, gist_chars: int, origin: str = "", focus: Sequence[str] = ()) -> str:
    """Layer 1 of progressive disclosure, as injected: citation, day, type and a one-line gist (centred on the
    prompt's ``focus`` words when they come late in a long memory)."""
    summary = gist(event.content, gist_chars, focus)
    return f"- [{event.cite}] {event.ts[:10]}{origin} {event.type.replace('_', ' ')}: {summary}"


def drop_repeated(chosen: list[Hit]) -> list[Hit]:
    """``chosen`` without the memories whose whole text another of them repeats.

    A session summary quotes its prompt ("Asked: …") and its answer ("Outcome: …") word for word, so
    injecting the three spends the prompt's room on one thing said twice (coding replay dev: 2.15 →
    1.37 memories per prompt). Only a verbatim repeat is dropped and nothing takes its place, so what
    is injected says everything it said before; of two identical texts the first stays.
    """
    texts = [_flat(h.event.content) for h in chosen]

    def repeated(i: int) -> bool:
        text = texts[i]
        return any(j != i and text in other and (len(other) > len(text) or j < i) for j, other in enumerate(texts))

    return [h for i, h in enumerate(chosen) if not repeated(i)]


ANSWERS = ("agent_response", "session_summary")


def with_answers(chosen: list[Hit], passed: list[Hit], max_results: int) -> list[Hit]:
    """Add its best answer over the gate to each chosen session that has none among the chosen.

    A pasted error often matches the tool output that showed it far better than the answer that
    explained it; the output alone says what happened, not what was found or done about it.
    """
    answered = {h.event.session_id for h in chosen if h.event.type in ANSWERS}
    missing = {h.event.session_id for h in chosen} - answered
    out = list(chosen)
    for h in passed:
        if len(out) >= max_results or not missing:
            break
        if h.event.session_id in missing and h.event.type in ANSWERS:
            out.append(h)
            missing.discard(h.event.session_id)
    return out


def supersede(hits: list[Hit], index: Any, similarity: float, cjk_vectors: bool = False) -> list[Hit]:
    """Drop an injected memory that a newer one on the same subject replaces.

    A changed setting, a replaced library or a reverted fix leaves two memories that say different
    things about one subject; the older one is stale. Two hits from different sessions whose opening
    vectors are this similar are taken as one subject, and only the newer is kept. Without ``cjk_vectors``
    (the model's vectors of Korean, Chinese and Japanese text say what it is about: a multilingual model,
    ``vectors_read_cjk``) a memory written mostly in those scripts is never taken for another's subject.
    """
    if len(hits) < 2 or index is None or similarity <= 0:
        return hits
    try:
        vectors = index.first_vectors([h.event.id for h in hits])
    except Exception as exc:  # noqa: BLE001 - a vector read failing must not stop the injection
        log("retrieval", "warning", f"supersession check skipped: {exc!r}")
        return hits
    if not cjk_vectors:
        # An English-only model maps any two Korean, Chinese or Japanese texts close together (MiniLM: cosine
        # 0.5-0.8 between unrelated Korean turns), so their closeness says nothing of their subject: taken for
        # one, it hid every older Korean memory behind a newer one.
        from memlane.retrieval.hybrid import mostly_cjk

        noise = {h.event.id for h in hits if mostly_cjk(h.event.content)}
        vectors = {i: v for i, v in vectors.items() if i not in noise}
    stale: set[str] = set()
    for i, a in enumerate(hits):
        for b in hits[i + 1 :]:
            va, vb = vectors.get(a.event.id), vectors.get(b.event.id)
            if va is None or vb is None or a.event.session_id == b.event.session_id:
                continue
            if float(va @ vb) >= similarity:
                older = a if a.event.ts < b.event.ts else b
                stale.add(older.event.id)
    return [h for h in hits if h.event.id not in stale]


# ---- knowledge updates read from edits --------------------------------------------------------------------

_EDIT_HEADER = re.compile(r"^(?:Edit|MultiEdit): [^\n]*\n")
# Code-like fragments: `name=value` settings with a literal value, and identifiers that are dotted,
# snake_case, camelCase or carry a digit (pool_size=10, date.today, fromNow, ACCESS_TOKEN_TTL). Plain
# words are too common to say that a memory quotes the removed code; they count only as the module of
# an import (a library).
_SETTING = re.compile(r"\b\w+\s*=\s*(?:-?\d[\d.]*\b|\"[^\"\n]*\"|'[^'\n]*'|True\b|False\b|None\b|true\b|false\b)")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*\w")
_CODE_LIKE = re.compile(r"[._\d]|[a-z][A-Z]")
_IMPORT = re.compile(r"""(?:^|\s)(?:import|from)\s+["']?([A-Za-z_][\w.-]*)|require\(["']([A-Za-z_][\w.-]*)["']\)""")
MIN_FRAGMENT = 4


def fragments(text: str) -> set[str]:
    """The code-like fragments of a text (settings with spaces around ``=`` normalised)."""
    found = {re.sub(r"\s*=\s*", "=", m) for m in _SETTING.findall(text)}
    found.update(m for m in _IDENTIFIER.findall(text) if _CODE_LIKE.search(m))
    for a, b in _IMPORT.findall(text):
        found.add(a or b)
    return {f for f in found if len(f) >= MIN_FRAGMENT}


def edit_sides(content: str) -> tuple[str, str] | None:
    """(removed text, added text) of an edit memory: a Claude Code Edit/MultiEdit (``- old`` / ``+ new``,
    an old or new string's further lines unprefixed) or a Codex ``apply_patch``; None for anything else."""
    old: list[str] = []
    new: list[str] = []
    if "*** Begin Patch" in content:
        for line in content.splitlines():
            if line.startswith("-") and not line.startswith("---"):
                old.append(line[1:])
            elif line.startswith("+") and not line.startswith("+++"):
                new.append(line[1:])
        return "\n".join(old), "\n".join(new)
    head = _EDIT_HEADER.match(content)
    if head is None:
        return None
    side: list[str] | None = None
    for line in content[head.end() :].splitlines():
        if line.startswith("- "):
            side, line = old, line[2:]
        elif line.startswith("+ "):
            side, line = new, line[2:]
        if side is not None:
            side.append(line)
    return "\n".join(old), "\n".join(new)


def removed_fragments(event: Event) -> set[str]:
    """Code-like fragments an edit took out and did not put back (empty for anything but an edit)."""
    if event.type != "tool_observation":
        return set()
    sides = edit_sides(event.content)
    if sides is None:
        return set()
    return fragments(sides[0]) - fragments(sides[1])


LOOKUP_EDITS = 20  # later edits read from the store per prompt
LOOKUP_TERMS = 8  # fragments of the chosen memories searched for, rarest first ...
LOOKUP_POSTINGS = 5_000  # ... while their words' document counts add up to at most this
_WORD = re.compile(r"[^\W_]+")


def drop_replaced(hits: list[Hit], store: Any = None, edits: list[tuple[Event, set[str]]] | None = None) -> list[Hit]:
    """Leave out memories that a later edit proves stale (``retirements``), with their whole exchange, and
    put the exchange of the edit in their place (``promote_replacements``).

    Runs before the gate, so the adaptive count is measured against what is still current.
    """
    retired_by, exchange = retirements(hits, store, edits)
    if retired_by:
        kept = [h for h in hits if exchange[h.event.id] not in retired_by]
        retired = [h for h in hits if exchange[h.event.id] in retired_by]
        hits = promote_replacements(kept, retired, retired_by, exchange)
    # Then the knowledge model's resolutions (issue 32: a later edit of the same file region, a revert, a
    # decision that removed what an exchange introduced): what the edit rule above did not catch.
    return resolved.drop_replaced(hits, store)


def retirements(
    hits: list[Hit], store: Any = None, edits: list[tuple[Event, set[str]]] | None = None
) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Which exchanges among ``hits`` a later edit proves stale: (retired exchange → the exchanges of
    the edits that retired it, each hit's exchange).

    This is memlane's one definition of "superseded", shared by injection (``drop_replaced``) and
    search order (``current_first``). When an edit removes a setting, an identifier or an imported
    library (``pool_size=10``, ``moment``) and does not put it back, an earlier memory quoting it
    describes code that no longer exists; the prompt that asked for it and the rest of that exchange
    are history too. Memories of the edit's own exchange stay (they are the change itself). The edits
    are those among the hits, plus ``edits`` (from ``later_edits``).
    """
    edits = [(h.event, gone) for h in hits if (gone := removed_fragments(h.event))] + list(edits or [])
    if not edits:
        return {}, {}
    exchange = _exchanges([h.event for h in hits] + [e for e, _ in edits], store)
    retired_by: dict[str, set[str]] = {}
    for h in hits:
        quoted = fragments(h.event.content)
        for edit, gone in edits:
            later = h.event.ts < edit.ts and exchange[h.event.id] != exchange[edit.id]
            if later and quoted & gone:
                retired_by.setdefault(exchange[h.event.id], set()).add(exchange[edit.id])
    return retired_by, exchange


def replacements(kept: list[Hit], replacing: set[str], exchange: dict[str, str]) -> dict[str, list[Hit]]:
    """The hits that stand for each replacing exchange: its answers (agent responses, session summary),
    or its best hit if it has none among ``kept`` (in order of preference); never the tool output
    around an answer that is there, and never an event the search did not return."""
    out: dict[str, list[Hit]] = {}
    for ex in replacing:
        members = [h for h in kept if exchange[h.event.id] == ex]
        answers = [h for h in members if h.event.type in ANSWERS]
        if answers or members:
            out[ex] = answers or members[:1]
    return out


def promote_replacements(
    kept: list[Hit], retired: list[Hit], retired_by: dict[str, set[str]], exchange: dict[str, str]
) -> list[Hit]:
    """Give the answer of a replacing edit's exchange the score of the best memory it retired.

    The retired memory answered the prompt's question as it stood before the edit; the exchange that
    made the edit answers it as it stands now, but usually shares fewer words with the prompt ("which
    library formats relative times?" names the old library's job, not the new one), so it sat under
    the gate or under the adaptive count while the stale answer led. What is raised is the exchange's
    ``replacements``.
    """
    best: dict[str, Hit] = {}  # replacing exchange → the best retired hit it replaces
    for h in retired:
        for ex in retired_by[exchange[h.event.id]]:
            if ex not in best or h.score > best[ex].score:
                best[ex] = h
    raise_ids = {h.event.id for hs in replacements(kept, set(best), exchange).values() for h in hs}
    out = []
    for h in kept:
        top = best.get(exchange[h.event.id])
        if h.event.id in raise_ids and top is not None and top.score > h.score:
            h = type(h)(h.event, top.score, {**h.sources, "replaces": top.score}, top.confidence)
        out.append(h)
    out.sort(key=lambda h: -h.score)
    return out


def current_first(hits: list[Hit], store: Any, shown: int) -> list[Hit]:
    """Search order after knowledge updates: a memory a later edit proves stale (``retirements``) goes below
    the current ones, marked ``superseded``, and what replaced it takes its place.

    Injection leaves such memories out; search keeps them (they are the history of a decision) but
    must not rank the old answer over the new one. On the coding replay the stale exchange of a
    changed setting or replaced library often leads on cosine and session support, since it was
    written about the very subject the question names, while the change that replaced it names the
    new thing. Each replacing exchange's ``replacements`` move up to the place of the first memory
    it retired; everything else keeps its order. As for injection, edits that are not among ``hits``
    are looked up for the memories that would be shown (the first ``shown``).
    """
    retired_by, exchange = retirements(hits, store, later_edits(hits[:shown], store))
    if not retired_by:
        return hits
    kept = [h for h in hits if exchange[h.event.id] not in retired_by]
    stale = [h for h in hits if exchange[h.event.id] in retired_by]
    first: dict[str, float] = {}  # replacing exchange → place of the first hit it retired
    for i, h in enumerate(hits):
        for ex in retired_by.get(exchange[h.event.id], ()):
            first.setdefault(ex, i - 0.5)
    raised = {h.event.id: first[ex] for ex, hs in replacements(kept, set(first), exchange).items() for h in hs}
    place = {h.event.id: i for i, h in enumerate(hits)}
    kept.sort(key=lambda h: min(place[h.event.id], raised.get(h.event.id, place[h.event.id])))
    for h in stale:
        h.sources["superseded"] = 1.0
    return kept + stale


def later_edits(hits: list[Hit], store: Any) -> list[tuple[Event, set[str]]]:
    """Edits in the store, later than the earliest of ``hits``, that take out a fragment one of them quotes.

    The edit that replaced an answer rarely matches the prompt itself, so it is looked up by what the
    chosen memories quote: one full-text query for their rarest fragments (a setting by its name),
    kept within a postings budget so a prompt never pays for common words.
    """
    quoted: set[str] = set()
    for h in hits:
        quoted |= fragments(h.event.content)
    keys = {f.split("=", 1)[0]: [w.lower() for w in _WORD.findall(f.split("=", 1)[0])] for f in quoted}
    keys = {k: words for k, words in keys.items() if words}
    if not keys:
        return []
    try:
        df = store.doc_freqs({w for words in keys.values() for w in words})
        cost = {k: sum(df.get(w, 0) for w in words) for k, words in keys.items()}
        chosen: list[str] = []
        spent = 0
        for key in sorted(cost, key=lambda k: (cost[k], k)):
            if not cost[key] or len(chosen) >= LOOKUP_TERMS or spent + cost[key] > LOOKUP_POSTINGS:
                continue  # a key the index has never seen cannot be in an edit either
            chosen.append(key)
            spent += cost[key]
        if not chosen:
            return []
        since = min(h.event.ts for h in hits)
        found = store.fts(" ".join(chosen), limit=LOOKUP_EDITS, types=["tool_observation"], since=since)
    except Exception as exc:  # noqa: BLE001 - a failed read must not stop the injection
        log("retrieval", "warning", f"edit lookup skipped: {exc!r}")
        return []
    known = {h.event.id for h in hits}
    return [(e, gone) for e, _ in found if e.id not in known and (gone := removed_fragments(e) & quoted)]


def _exchanges(events: list[Event], store: Any) -> dict[str, str]:
    """Each event's exchange: the id of the user prompt that opened it (the event itself without a store)."""
    prompts: dict[str, Any] = {}
    if store is not None:
        try:
            prompts = store.exchange_prompts([e for e in events if e.type != "user_prompt"])
        except Exception as exc:  # noqa: BLE001 - a failed read must not stop the injection
            log("retrieval", "warning", f"exchange lookup skipped: {exc!r}")
    return {e.id: prompts[e.id].id if e.id in prompts else e.id for e in events}
