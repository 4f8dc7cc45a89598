"""Hybrid search over one project's memory: FTS5/BM25 + vectors + recency + type, fused and labelled.

The vector side is optional: without an embedder or index (or before anything is embedded) results
come from the text side alone, on the same score scale. The embedder and LanceDB index are imported
lazily, so text-only callers (hooks' fallback, tests) never pay for numpy or torch.

The query is embedded on a worker thread while SQLite runs the full-text query: both release the
GIL, so a search costs about max(embed, FTS) + vector search + fusion rather than their sum.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, namedtuple
from collections.abc import Sequence
from datetime import UTC, datetime

from memlane.retrieval import answers, cjk, resolved, scoring, select, when
from memlane.store.db import STOPWORDS, Event, parse_query, query_stopwords
from memlane.store.keys import cjk_count
from memlane.store.records import tool_matches
from memlane.store.schema import UNSEARCHED_TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a hook ~1 ms to import: annotations only
    from typing import Any, NamedTuple

    from memlane.retrieval.speakers import People
    from memlane.store.backend import MemoryStore

_pool: list[Any] = []


def _executor() -> Any:
    if not _pool:
        from concurrent.futures import ThreadPoolExecutor

        _pool.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="memlane-embed"))
    return _pool[0]


_TOKEN = re.compile(r"[^\W_]+")
EXCHANGE_DEPTH = 30  # candidates whose exchange is looked up
# Compiled on first use (``re`` caches it): the hooks' full-text fallback imports this module and never needs it.
_LATIN = r"[A-Za-z][\w.]*"
MAX_SHARE = 0.99
MIN_BACKGROUND = 10  # neighbours needed to take their median as the query's background similarity
UNRELATED_COSINE = 0.2  # all-MiniLM-L6-v2's typical similarity between unrelated texts (an embedder may say its own)


class Prepared:
    """A query's vector made ahead of its search, with the neighbours it had then (``Engine.prepare``).

    The neighbours are used only if the search asks exactly what was asked ahead (same count, no filter) and
    the vector table has not changed since: then they are what the search would find itself, so the answer
    does not depend on when the hook's request arrived.
    """

    def __init__(self, vector: Any, k: int, near: dict[str, Any] | None, version: int | None, query: str = "") -> None:
        self.query = query  # the text embedded: a search for other text (other names taken out) embeds its own
        self.vector = vector
        self.k = k
        self.near = near
        self.version = version

    @classmethod
    def make(cls, embedder: Any, index: Any, query: str, k: int) -> Prepared:
        vector = embedder.embed_query(query)
        if index is None:
            return cls(vector, k, None, None, query)
        try:
            version = index.table_version()
            return cls(vector, k, index.nearest(vector, k), version, query)
        except Exception as exc:  # noqa: BLE001 - the search will ask the index itself and report it
            from memlane.logs import log

            log("retrieval", "debug", f"neighbours not prepared: {exc!r}")
            return cls(vector, k, None, None, query)

    def neighbours(self, index: Any, k: int, where: str | None) -> dict[str, Any] | None:
        if self.near is None or k != self.k or where is not None:
            return None
        try:
            return self.near if index.table_version() == self.version else None
        except Exception:  # noqa: BLE001 - unsure: search afresh
            return None


def searched(query: str, people: People | None) -> str:
    """The text searched for ``query``: without the names of a dialogue store's speakers (``speakers``), unless
    nothing else is left."""
    return people.searched(query) if people else query


class Hit:
    """A search result: the event, its P (``score``), its evidence (``sources``), its tier (``confidence``: what
    a prompt would do with it) and ``shown``, the label search lists it with (the tier rule read from the
    order, so labels fall down the list; None where no order was computed)."""

    __slots__ = ("confidence", "event", "score", "shown", "sources")

    def __init__(self, event: Event, score: float, sources: dict[str, float], confidence: str = "none") -> None:
        self.event = event
        self.score = score
        self.sources = sources
        self.confidence = confidence
        self.shown: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.event.as_dict(),
            "score": round(self.score, 4),
            "confidence": self.confidence,
            "shown": self.shown,
            "sources": {k: round(v, 4) for k, v in self.sources.items()},
        }

    def __repr__(self) -> str:
        return f"Hit({self.event.cite}, {self.score:.3f}, {self.confidence})"


def query_terms(query: str) -> tuple[list[list[str]], list[str]]:
    """Word terms (each a list of tokens: a phrase like pool_manager.py is several) and CJK bigrams
    (``cjk.bigrams``: content words only, without their particles).

    Every distinct word counts once, stop words included: they are left out of the FTS5 match (they
    would match most of the store) but not out of the score, as plain BM25 has them — their IDF is
    small, yet dropping them put memlane's full text below plain BM25 on the coding replay (dev).
    """
    words, _, _ = parse_query(query)
    terms: dict[tuple[str, ...], None] = {}
    for w in words + [f'"{s}"' for s in query_stopwords(query)]:
        if toks := _TOKEN.findall(w.strip('"').replace('""', '"').lower()):
            terms[tuple(t if t.isascii() else _fold(t) for t in toks)] = None
    return [list(t) for t in terms], cjk.bigrams(query)


def doc_freqs(store: MemoryStore, tokens: set[str]) -> tuple[int, dict[str, int]]:
    """(about how many events there are, how many contain each token): the inputs of IDF."""
    return max(store.size_estimate(), 1), store.doc_freqs(tokens) if tokens else {}


def lexical(
    event: Event,
    terms: list[list[str]],
    grams: list[str],
    weights: list[float],
    avg_length: float,
    alternatives: frozenset[str] = frozenset(),
) -> tuple[float, float]:
    """The event's Okapi BM25 for the query terms as a share of the ideal score (``scoring.text_score``):
    (the share from the query's content words, the share its stop words add).

    Computed here rather than read from FTS5's ``bm25()``: the same formula, but with the IDF that
    never goes negative (FTS5 floors words in over half the events to ~0) and for CJK bigrams, which
    count like a word of IDF 1 met once. A phrase term (``pool_manager.py``) counts its occurrences.

    Stop words are kept apart: plain BM25 scores them and the order follows it (``scoring.evidence``),
    but they say little about whether a memory bears on the query, so they neither raise P (the
    weights were fitted without them) nor, in the ideal, dilute the share of a prompt like "what did
    we do about the pool timeout?" under the injection gate.
    """
    if not terms and not grams:
        return 0.0, 0.0
    text = event.content.lower()
    tokens = [t if t.isascii() else _fold(t) for t in _TOKEN.findall(text)]
    counts = Counter(tokens)
    length = len(tokens)
    score = stop = ideal = 0.0
    for term, weight in zip(terms, weights, strict=True):
        tf = counts[term[0]] if len(term) == 1 else _phrase_count(tokens, term)
        if len(term) == 1 and term[0] in STOPWORDS:
            stop += scoring.bm25_term(weight, tf, length, avg_length)
            continue
        score += scoring.bm25_term(weight, tf, length, avg_length)
        if term[0] not in alternatives:  # a loanword's English word: an alternative, already in the ideal
            ideal += weight * (scoring.K1 + 1)
    for gram in grams:
        if gram in text:
            score += 1.0
        ideal += scoring.K1 + 1
    # Alternatives can carry an event past the ideal: the share stays under 1, as the weights were fitted for.
    return min(scoring.text_score(score, ideal), MAX_SHARE), scoring.text_score(stop, ideal)


def _phrase_count(tokens: list[str], phrase: list[str]) -> int:
    n = len(phrase)
    first = phrase[0]
    return sum(1 for i, t in enumerate(tokens) if t == first and tokens[i : i + n] == phrase)


def _fold(token: str) -> str:
    """Without diacritics, as the word index stores it (``remove_diacritics``): café → cafe."""
    return "".join(ch for ch in unicodedata.normalize("NFD", token) if not unicodedata.combining(ch))


def mostly_cjk(text: str) -> bool:
    """Korean, Chinese or Japanese make up most of the letters (identifiers and English words aside)."""
    letters = sum(1 for ch in text if ch.isalpha())
    return letters > 0 and cjk_count(text) >= 0.5 * letters


if TYPE_CHECKING:

    class _Candidate(NamedTuple):
        score: float
        ts: str
        event_id: str
        event: Event | None  # None until read: vector-only candidates are ranked before they are read
        sources: dict[str, float]
        session_id: str

else:  # the same tuple without importing typing (~1 ms of the hooks' full-text fallback)
    _Candidate = namedtuple("_Candidate", "score ts event_id event sources session_id")


def uses_vectors(query: str, rcfg: Any, embedder: Any) -> bool:
    """Whether a search for ``query`` asks the vector side. An English-only model maps Korean, Chinese and
    Japanese text to near-identical vectors, so text mostly in those scripts skips it unless
    ``retrieval.cjk_vectors`` is on; a multilingual model (``multilingual = True``) is always asked."""
    return bool(rcfg.cjk_vectors or getattr(embedder, "multilingual", False) or not mostly_cjk(query))


def _lift(ranked: list[_Candidate], group_of: dict[str, str], weight: float, label: str) -> list[_Candidate]:
    """Lift each candidate by the best other candidate of its group, part of the way to 1.

    A score never drops, so a lone strong match keeps its "high". The lift is recorded in
    ``sources[label]``.
    """
    top: dict[str, list[float]] = {}
    for c in ranked:
        if group := group_of.get(c.event_id):
            best = top.setdefault(group, [])
            best.append(c.score)
            best.sort(reverse=True)
            del best[2:]
    out = []
    for c in ranked:
        best = top.get(group_of.get(c.event_id, ""), [])
        others = best[1:] if best and best[0] == c.score else best  # the best score that is not c's own
        if others:
            c.sources[label] = others[0]
            c = c._replace(score=c.score + weight * others[0] * (1 - c.score))
        out.append(c)
    return out


def _recency(ranked: list[_Candidate], half_life_days: float) -> None:
    """Each candidate's recency relative to the newest one: 1 for the newest, halving every half-life.

    Relative, not to the wall clock: what matters is which of two memories on one subject is the later
    (a changed setting, a replaced library), whether the question comes a day or a year after both.
    """
    newest = max((c.ts for c in ranked), default="")
    top = scoring.moment(newest)
    for c in ranked:
        c.sources["recency"] = scoring.recency(c.ts, half_life_days, top) if top is not None else 0.0


def _order(c: _Candidate, rcfg: Any) -> float:
    """The candidate's place: its own evidence, plus what its session and exchange add to P (at most
    ``support_margin`` in log-odds), plus the bounded recency/type/time nudge (``scoring.rank_key``)."""
    s = c.sources
    support = scoring.logit(c.score) - scoring.logit(scoring.probability(s, rcfg))  # what the lifts added
    return scoring.rank_key(
        scoring.evidence(s, rcfg), support, s.get("recency", 0.0), s.get("prior", 1.0), s.get("when"), rcfg
    )


def _session_support(ranked: list[_Candidate], weight: float) -> list[_Candidate]:
    """Lift each candidate by the best other candidate from its session.

    A question and its answer, or a bug and its fix, usually sit in one session: when several of a
    session's events match, each is likelier to be the one wanted. Measured on LongMemEval (full
    text): turn-level recall@10 0.827 → 0.853, session recall_any@5 0.966 → 0.970.
    """
    if weight <= 0:
        return ranked
    return _lift(ranked, {c.event_id: c.session_id for c in ranked if c.session_id}, weight, "session")


class Retriever:
    """Search one project. ``embedder`` and ``index`` are optional (text-only without them)."""

    def __init__(
        self,
        store: MemoryStore,
        cfg: Any,
        embedder: Any = None,
        index: Any = None,
        lexicon: Any = None,
        people: People | None = None,
    ) -> None:
        self.store = store
        self.cfg = cfg
        self.embedder = embedder
        self.index = index
        self.lexicon = lexicon  # ``loanwords.Lexicon`` of this store, when the searching process has one
        self.people = people  # the names of a dialogue store's speakers (``speakers``), taken out of queries

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        exclude_ids: Sequence[str] = (),
        query_vector: Any = None,
        now: datetime | None = None,
        current_first: bool = True,
        tool: str | None = None,
        file: str | None = None,
        failed: bool = False,
    ) -> list[Hit]:
        """The best ``limit`` events for ``query``; ``now`` anchors phrases like "two weeks ago".

        With ``current_first``, a memory that a later edit proves stale ranks below the current ones and
        is labelled "superseded" (``select.current_first``); injection turns it off, since it leaves
        such memories out itself.
        """
        rcfg = self.cfg.retrieval
        query = searched(query, self.people)
        if isinstance(query_vector, Prepared) and query_vector.query and query_vector.query != query:
            query_vector = None  # embedded with other names taken out (they were read in between): embed again
        found = when.find(query, now or datetime.now(UTC))
        span, words = found if found else (None, query)
        filters: dict[str, Any] = {"session": session, "types": types, "since": since, "until": until}
        if tool or file or failed:  # tool history (store.records.TOOL_FILTERS): only tool calls qualify
            filters.update(types=["tool_observation"], tool=tool, file=file, failed=failed)
        pending = self._embed_async(query, query_vector) if uses_vectors(query, rcfg, self.embedder) else None
        # English words of the store for the prompt's Korean words (``loanwords``): loanwords by sound, others by
        # the glossary (``glossary``). The word index looks for them as alternatives of the Korean words they stand
        # for (they do not raise the ideal a memory is measured against, so a memory that matches the Korean itself
        # keeps its share), and an English-only model, which cannot read the Korean, is asked about them and the
        # prompt's Latin words.
        alternatives: frozenset[str] = frozenset()
        if english := self._english_of_korean(query):
            alternatives = frozenset(english)
            words = f"{words} {' '.join(english)}"
            if pending is None and self.embedder is not None:
                pending = self._embed_async(" ".join([*re.findall(_LATIN, query), *english]), None)
        text_hits = self.store.fts(words, limit=rcfg.candidates, exclude_ids=exclude_ids, **filters)
        inside = None
        if span is not None:  # also the best matches from the time the query names, however few
            since = max(filter(None, [filters["since"], _iso(span[0])]))
            until = min(filter(None, [filters["until"], _iso(span[1])]))
            inside = {**filters, "since": since, "until": until}
            text_hits += self.store.fts(words, limit=rcfg.candidates, exclude_ids=exclude_ids, **inside)
        events = {e.id: e for e, _ in text_hits}
        terms, grams = query_terms(words)
        total, df = doc_freqs(self.store, {t for term in terms for t in term})  # still overlapping the embedding
        rows_indexed, avg_length = self.store.index_stats()
        total = rows_indexed or total
        near = self._vector_candidates(pending, exclude_ids, filters)
        if inside is not None:  # and by meaning, from inside that time
            for event_id, neighbour in self._vector_candidates(pending, exclude_ids, inside).items():
                near.setdefault(event_id, neighbour)
        # A phrase is at least as rare as its rarest word.
        weights = [scoring.idf(total, min(df.get(t, 0) for t in term)) for term in terms]
        cosines = sorted(n.similarity for n in near.values())
        # The median neighbour is the "on topic" level; a store too small for a median gets the level of
        # unrelated text instead (a two-memory store's median is its best match).
        unrelated = getattr(self.embedder, "unrelated_cosine", UNRELATED_COSINE)
        background = cosines[len(cosines) // 2] if len(cosines) >= MIN_BACKGROUND else unrelated
        floor = cosines[0] if cosines else None  # a candidate outside the neighbours is at most this close
        rows = []
        for event_id in {**events, **near}:
            event = events.get(event_id)
            # A vector-only candidate is ranked from what its vector row carries; its event is read
            # from the store only if it makes the list (or if the row predates type/ts being stored).
            if event:
                kind, ts, session_id = event.type, event.ts, event.session_id
            else:
                kind, ts, session_id = near[event_id].type, near[event_id].ts, near[event_id].session_id
            if not (kind and ts):
                event = next(iter(self.store.by_ids([event_id])), None)
                if event is None:
                    continue
                kind, ts, session_id = event.type, event.ts, event.session_id
            if kind in UNSEARCHED_TYPES:  # a vector row too old to carry its type
                continue
            text, stop = (
                lexical(events[event_id], terms, grams, weights, avg_length, alternatives)
                if event_id in events
                else (0, 0)
            )
            cosine = near[event_id].similarity if event_id in near else floor
            rows.append((event_id, event, kind, ts, session_id, text, stop, cosine))
        rows, answering = self._answering(query, rows, rcfg)
        ranked: list[_Candidate] = []
        for event_id, event, kind, ts, session_id, text, stop, cosine in rows:
            sources = {"text": text, "prior": scoring.TYPE_PRIOR.get(kind, 0.5)}
            if event_id in answering:
                sources["answer"] = 1.0
            if stop:
                sources["stopwords"] = stop
            if cosine is not None:
                sources.update(vector=cosine, standout=cosine - background)
            if span is not None:  # the query names a time: events from then come first (order only)
                sources["when"] = when.closeness(ts, span)
            score = scoring.probability(sources, rcfg)
            ranked.append(_Candidate(score, ts, event_id, event, sources, session_id))
        ranked = self._exchange_support(ranked, rcfg.exchange_support, set(exclude_ids))
        ranked = _session_support(ranked, rcfg.session_support)
        _recency(ranked, rcfg.recency_half_life_days)
        ranked.sort(key=lambda c: (c.ts, c.event.seq if c.event else 0), reverse=True)  # ties: newest first
        order = {c.event_id: _order(c, rcfg) for c in ranked}
        ranked.sort(key=lambda c: -order[c.event_id])
        # What the list is sorted by (log-odds), and how far that stands above the same background, for the CLI
        # to show: a label read from the shown number falls as the list does (the tier, from P, need not).
        level_key = scoring.background(list(order.values()), scoring.logit(scoring.no_evidence(rcfg, bool(near))))
        for c in ranked[: max(limit, EXCHANGE_DEPTH)]:
            c.sources["rank"] = order[c.event_id]
            c.sources["rank_lift"] = order[c.event_id] - level_key
        if current_first:  # over the head whose events _exchange_support has read anyway
            head = self._resolve(ranked, max(limit, EXCHANGE_DEPTH), filters)
            hits = select.current_first(head, self.store, limit)
            # Then the knowledge model's resolutions (issue 32): never a replaced memory above its replacement.
            hits = resolved.current_first(hits, self.store, lambda e: _passes(e, filters), set(exclude_ids))[:limit]
        else:
            hits = self._resolve(ranked, limit, filters)
        level = scoring.background([c.score for c in ranked], scoring.no_evidence(rcfg, bool(near)))
        for hit in hits:
            hit.sources["lift"] = rise = scoring.lift(hit.score, level)
            hit.confidence = "superseded" if "superseded" in hit.sources else scoring.tier(hit.score, rise, rcfg)
            if alternatives and hit.confidence == "high" and not cjk.has_hangul(hit.event.content):
                # Found through the English of its Korean words, not through what the prompt says: an index line.
                hit.confidence = "suggested"
            if hit.confidence != "superseded" and "rank_lift" in hit.sources:
                key = hit.sources["rank"]
                hit.shown = scoring.tier(scoring.sigmoid(key), hit.sources["rank_lift"], rcfg)
        return hits

    def _answering(self, query: str, rows: list[tuple[Any, ...]], rcfg: Any) -> tuple[list[tuple[Any, ...]], set[str]]:
        """The candidates holding what the query asks for (``answers``: a time, for a question asking when), when
        ``retrieval.answer_weight`` is on, with ``rows`` (id, event, …) whose vector-only events this read from
        the store to tell: the ranking keeps them, so they are not read again."""
        if rcfg.answer_weight <= 0 or (kind := answers.asks(query)) not in answers.WEIGHED:
            return rows, set()
        read = {e.id: e for e in self.store.by_ids([row[0] for row in rows if row[1] is None])}
        rows = [(row[0], row[1] or read.get(row[0]), *row[2:]) for row in rows]
        return rows, {row[0] for row in rows if row[1] is not None and answers.holds(kind, row[1].content)}

    def _exchange_support(self, ranked: list[_Candidate], weight: float, exclude: set[str]) -> list[_Candidate]:
        """Lift the members of one exchange (a user prompt and what followed it) by each other.

        A prompt states what was wanted and the answer how it went; when the answer matches a query,
        the prompt that asked for it is likely wanted too, even if it shares few words with the query.
        Prompts of strong matches join the candidates this way. Only the top ``EXCHANGE_DEPTH``
        candidates are looked at, so the cost is a few indexed reads per search.
        """
        if weight <= 0 or not ranked:
            return ranked
        ranked.sort(key=lambda c: -c.score)
        head = ranked[:EXCHANGE_DEPTH]
        found = {e.id: e for e in self.store.by_ids([c.event_id for c in head if c.event is None])}
        head = [c._replace(event=c.event or found.get(c.event_id)) for c in head]
        ranked[: len(head)] = head
        prompts = self.store.exchange_prompts(
            [c.event for c in head if c.event is not None and c.event.type != "user_prompt"]
        )
        group: dict[str, str] = {}
        for c in head:
            if c.event is not None and c.event.type == "user_prompt":
                group[c.event_id] = c.event_id
            elif c.event_id in prompts:
                group[c.event_id] = prompts[c.event_id].id
        out = _lift(ranked, group, weight, "exchange")
        present = {c.event_id for c in ranked}
        for prompt in {p.id: p for p in prompts.values()}.values():
            if prompt.id in present or prompt.id in exclude:
                continue
            lift = max(c.score for c in head if group.get(c.event_id) == prompt.id)
            out.append(_Candidate(weight * lift, prompt.ts, prompt.id, prompt, {"exchange": lift}, prompt.session_id))
        return out

    def _resolve(self, ranked: list[_Candidate], limit: int, filters: dict[str, Any]) -> list[Hit]:
        """The first ``limit`` ranked candidates as hits, reading the vector-only ones from the store.

        A vector can outlive its event for a moment (forget deletes the event first), so a candidate
        the store no longer has is skipped and the next one takes its place.
        """
        hits: list[Hit] = []
        start = 0
        while len(hits) < limit and start < len(ranked):
            window = ranked[start : start + limit - len(hits)]
            start += len(window)
            found = {e.id: e for e in self.store.by_ids([c.event_id for c in window if c.event is None])}
            for c in window:
                event = c.event or found.get(c.event_id)
                if event is not None and _passes(event, filters):
                    hits.append(Hit(event, c.score, c.sources))
        return hits

    def _english_of_korean(self, query: str) -> list[str]:
        """The store's English words for the query's Korean words (``loanwords``): its loanwords, then the
        glossary's translations of its other words."""
        if self.lexicon is None or not cjk.has_hangul(query):  # the hooks' fallback never has one
            return []
        found = dict.fromkeys([*self.lexicon.expand(query), *self.lexicon.translate(query)])
        # A speaker's name written in Hangul (미나는 → mina) is taken out like the name itself (``speakers``).
        return [w for w in found if not (self.people and self.people.is_name(w))]

    def _embed_async(self, query: str, query_vector: Any) -> Any:
        """The query vector, or a future of it, or None when there is no vector side."""
        if self.index is None or (self.embedder is None and query_vector is None):
            return None
        if query_vector is not None:
            return query_vector
        return _executor().submit(self.embedder.embed_query, query)

    def _vector_candidates(self, pending: Any, exclude_ids: Sequence[str], filters: dict[str, Any]) -> dict[str, Any]:
        """Nearest events by meaning: event id → ``Neighbour(similarity, type, ts)``."""
        if pending is None:
            return {}
        try:
            vector = pending.result() if hasattr(pending, "result") else pending
            k, where, near = self.cfg.retrieval.candidates + len(exclude_ids), _where(filters), None
            if isinstance(vector, Prepared):
                vector, near = vector.vector, vector.neighbours(self.index, k, where)
            if near is None:
                near = self.index.nearest(vector, k, where=where)
        except Exception as exc:  # noqa: BLE001 - a broken vector index degrades to text search
            from memlane.logs import log

            log("retrieval", "warning", f"vector search failed, text only: {exc!r}")
            return {}
        skip = set(exclude_ids)
        # A store from before schema 9 may still hold session markers' vectors until its worker drops them:
        # they must not count among the neighbours (the median, the floor), where their folder path would.
        return {e: n for e, n in near.items() if e not in skip and n.type not in UNSEARCHED_TYPES}


def _passes(event: Event, filters: dict[str, Any]) -> bool:
    if not tool_matches(event, filters.get("tool"), filters.get("file"), bool(filters.get("failed"))):
        return False  # vector rows carry no tool metadata: these are checked once the event is read
    if filters.get("session") and event.session_id != filters["session"]:
        return False
    if filters.get("types") and event.type not in filters["types"]:
        return False
    if filters.get("since") and event.ts < filters["since"]:
        return False
    return not (filters.get("until") and event.ts >= filters["until"])


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _where(filters: dict[str, Any]) -> str | None:
    """A LanceDB filter for the vector rows (they carry type, session_id and ts)."""
    clauses = []
    if filters.get("session"):
        clauses.append(f"session_id = {_quote(filters['session'])}")
    if filters.get("types"):
        clauses.append(f"type IN ({', '.join(_quote(t) for t in filters['types'])})")
    if filters.get("since"):
        clauses.append(f"ts >= {_quote(filters['since'])}")
    if filters.get("until"):
        clauses.append(f"ts < {_quote(filters['until'])}")
    return " AND ".join(clauses) or None
