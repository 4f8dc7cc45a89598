"""Full-text search over events: query parsing (words, CJK trigrams), BM25 with a postings budget,
document frequencies (cached per database), the O(1) size estimate, and the redaction check.

Owns the SQL against ``events_fts``, ``events_cjk`` and ``events_vocab`` reads.
"""

from __future__ import annotations

import re
import sqlite3

from memlane.store import keys, schema
from memlane.store.events import EventStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from memlane.store.records import Event

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
POSTINGS_BUDGET = 20_000
_PLAIN_WORD = re.compile(r"[a-z0-9]+")
_DF_STALE = 0.05  # document counts are reused until the store has grown by 5%
_DF_CACHE_MAX = 50_000
_DF_CACHE: dict[tuple[str, str], tuple[int, int]] = {}  # (db file, term) → (document count, store size then)


def _fresh(then: int, size: int) -> bool:
    """A count taken at store size ``then`` still serves at ``size`` (IDF hardly moves within 5%)."""
    return then <= size <= then * (1 + _DF_STALE) + 100


_CHUNK_STRIP = "\"'`()[]{}<>,;:!?."
_CHUNK = re.compile(r"\S+")
_PART = re.compile(r"[^\W_]+")


SHORT_CJK_SCAN = 20_000  # newest events with CJK text searched for a query's one- or two-letter CJK words


class FullTextStore(EventStore):
    """BM25 search and the word statistics it needs."""

    def size_estimate(self) -> int:
        """About how many events there are, in O(1): COUNT(*) reads a whole index (10 ms at 1M events).

        Forgotten events leave gaps in ``seq``, so this can overshoot; IDF weights do not mind.
        """
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])

    def doc_freqs(self, terms: Iterable[str]) -> dict[str, int]:
        """How many events contain each word term (absent terms are left out).

        The word index counts a term's documents by walking its whole postings list (~7 ms for a word in
        30% of 1M events), and a search needs the counts twice (choosing what to match, weighting
        matches), so counts are reused while the store grows by less than ``_DF_STALE``: in this process
        from memory, across processes (every hook is a new one) from the ``term_counts`` table.
        """
        size = self.size_estimate()
        out: dict[str, int] = {}
        missing = []
        for term in set(terms):
            cached = _DF_CACHE.get((self.file, term))
            if cached is not None and _fresh(cached[1], size):
                if cached[0]:
                    out[term] = cached[0]
            else:
                missing.append(term)
        if not missing:
            return out
        if len(_DF_CACHE) > _DF_CACHE_MAX:
            _DF_CACHE.clear()
        marks = ",".join("?" * len(missing))
        kept = self.db.execute(f"SELECT term, doc, size FROM term_counts WHERE term IN ({marks})", missing).fetchall()
        for term, doc, then in kept:
            if _fresh(then, size):
                _DF_CACHE[(self.file, term)] = (int(doc), int(then))
                missing.remove(term)
                if doc:
                    out[term] = int(doc)
        if not missing:
            return out
        marks = ",".join("?" * len(missing))
        found = dict(self.db.execute(f"SELECT term, doc FROM events_vocab WHERE term IN ({marks})", missing))
        for term in missing:
            _DF_CACHE[(self.file, term)] = (int(found.get(term, 0)), size)
            if found.get(term):
                out[term] = int(found[term])
        # Only words the index holds: a query's other words (a secret pasted into a prompt is one) never
        # reach disk here.
        self._keep_counts([(term, int(found[term]), size) for term in missing if found.get(term)])
        return out

    def _keep_counts(self, rows: list[tuple[str, int, int]]) -> None:
        """Save counts for the next process, if the store can be written at once: it is only a cache, so a
        busy or read-only store costs nothing (busy timeout 0 for this one write)."""
        if not rows or self.db.in_transaction or self.ephemeral:
            return
        timeout = self.db.execute("PRAGMA busy_timeout").fetchone()[0]
        try:
            self.db.execute("PRAGMA busy_timeout = 0")
            with self.write() as db:
                db.executemany("INSERT OR REPLACE INTO term_counts (term, doc, size) VALUES (?, ?, ?)", rows)
        except sqlite3.Error:
            pass
        finally:
            self.db.execute(f"PRAGMA busy_timeout = {int(timeout)}")

    # ---- rebuilding (``memlane rebuild``) -------------------------------------------------------

    def clear_fulltext(self) -> None:
        """Empty both word indexes and the saved word counts (inside the caller's transaction)."""
        self.db.execute("INSERT INTO events_fts(events_fts) VALUES ('delete-all')")
        self.db.execute("INSERT INTO events_cjk(events_cjk) VALUES ('delete-all')")
        self.db.execute("DELETE FROM term_counts")
        _DF_CACHE.clear()

    def index_events(self, events: Iterable[Event]) -> None:
        """Index events as the insert triggers do: searchable ones only, CJK ones in the trigram index too."""
        for event in events:
            if not schema.indexed(event.type, event.content):
                continue
            self.db.execute("INSERT INTO events_fts(rowid, content) VALUES (?, ?)", (event.seq, event.content))
            if keys.has_cjk(event.content):
                self.db.execute("INSERT INTO events_cjk(rowid, content) VALUES (?, ?)", (event.seq, event.content))

    def index_stats(self) -> tuple[int, float]:
        """(rows in the word index, their average length in tokens): BM25's N and avgdl, exactly and in O(1).

        FTS5 keeps both in its "averages" record (row 1 of ``events_fts_data``: varints row count, then
        token count per column), updated with every insert and delete.
        """
        try:
            row = self.db.execute("SELECT block FROM events_fts_data WHERE id = 1").fetchone()
        except sqlite3.OperationalError:
            row = None
        if not row or not row[0]:
            return 0, 0.0
        rows, at = _varint(row[0], 0)
        tokens, _ = _varint(row[0], at) if at < len(row[0]) else (0, at)
        return rows, (tokens / rows if rows else 0.0)

    # ---- full-text -----------------------------------------------------------------------------

    def fts(
        self,
        query: str,
        *,
        limit: int = 20,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        exclude_ids: Sequence[str] = (),
        tool: str | None = None,
        file: str | None = None,
        failed: bool = False,
    ) -> list[tuple[Event, float]]:
        """BM25 hits for ``query``: (event, relevance in 0..1 relative to the best hit), best first.

        Words go to the word index as quoted phrases (so ``pool_manager.py`` matches as a phrase);
        CJK chunks go to the trigram index as OR'ed trigrams, which tolerates Korean particles.
        """
        words, trigrams, short_cjk = parse_query(query)
        where, args = self._filters(
            session=session, types=types, since=since, until=until, alias="e", tool=tool, file=file, failed=failed
        )
        if exclude_ids:
            where += (" AND " if where else "WHERE ") + f"e.id NOT IN ({','.join('?' * len(exclude_ids))})"
            args.extend(exclude_ids)
        scored: dict[int, float] = {}
        match, bounded = self._word_match(words) if words else ("", True)
        if match:
            self._fts_table("events_fts", match, where, args, limit, scored, ranked=bounded)
        if trigrams:
            self._fts_table("events_cjk", " OR ".join(trigrams), where, args, limit, scored)
        # One- or two-character CJK words: too short for trigrams, looked for among the newest SHORT_CJK_SCAN events
        # with CJK text (the events_cjk_seq index), so a Korean prompt costs the same on a store of any size.
        floor = self._short_cjk_floor() if short_cjk else 0
        for chunk in short_cjk:
            rows = self.db.execute(
                f"SELECT e.seq FROM events e {where + (' AND ' if where else 'WHERE ')} e.has_cjk = 1"
                " AND e.seq >= ? AND e.content LIKE ? ORDER BY e.seq DESC LIMIT ?",
                [*args, floor, f"%{chunk}%", limit],
            ).fetchall()
            for (seq,) in rows:
                scored[seq] = max(scored.get(seq, 0.0), 0.5)
        best = sorted(scored.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]
        events = self.by_seqs([seq for seq, _ in best])
        return [(events[seq], score) for seq, score in best if seq in events]

    def _short_cjk_floor(self) -> int:
        """The lowest seq among the newest ``SHORT_CJK_SCAN`` events with CJK text (0 when there are fewer)."""
        row = self.db.execute(
            "SELECT seq FROM events WHERE has_cjk = 1 ORDER BY seq DESC LIMIT 1 OFFSET ?", (SHORT_CJK_SCAN - 1,)
        ).fetchone()
        return int(row[0]) if row else 0

    def _word_match(self, words: list[str]) -> tuple[str, bool]:
        """(the MATCH expression for quoted word terms, whether it is within a postings budget).

        BM25 must score every row a query matches: an OR of common words over a large store can match
        most of it (100k rows ≈ 100 ms). Common words carry little evidence (their IDF is near zero),
        so terms are taken rarest first until their document counts reach ``POSTINGS_BUDGET``; when even
        the rarest word is that common, the two rarest must appear together, and as that can still
        match a large share of the store, it is not ranked (see ``_fts_table``).
        """
        tokens = {w.strip('"').replace('""', '"').lower(): w for w in words}
        try:
            df = self.doc_freqs(tokens)
        except sqlite3.OperationalError:
            return " OR ".join(words), True
        # A plain ASCII word the index has never seen matches nothing: leave it out, or as the "rarest"
        # word it would crowd out the words that can match. Phrases (pool_manager.py) and accented words
        # are not looked up in their indexed form, so they stay and count as rare.
        words = [w for t, w in tokens.items() if t in df or not _PLAIN_WORD.fullmatch(t)]
        if not words:
            return "", True
        if sum(df.values()) <= POSTINGS_BUDGET:
            return " OR ".join(words), True
        ranked = sorted(words, key=lambda w: df.get(w.strip('"').replace('""', '"').lower(), 0))
        chosen: list[str] = []
        total = 0
        for word in ranked:
            count = df.get(word.strip('"').replace('""', '"').lower(), 0)
            if chosen and total + count > POSTINGS_BUDGET:
                break
            chosen.append(word)
            total += count
        if total > POSTINGS_BUDGET and len(ranked) > 1:
            return f"{ranked[0]} AND {ranked[1]}", False
        return " OR ".join(chosen), total <= POSTINGS_BUDGET

    def _fts_table(
        self,
        table: str,
        match: str,
        where: str,
        args: list[Any],
        limit: int,
        scored: dict[int, float],
        ranked: bool = True,
    ) -> None:
        """Add ``table``'s hits for ``match`` to ``scored`` (seq → relevance relative to the best hit).

        ``ranked=False`` is for a match too broad to score: BM25 would rank every matching row (seconds
        over a million events), so the newest matches are taken instead, walking the index backwards
        and stopping at ``limit``, each with a middling relevance.
        """
        source = f"{table} f JOIN events e ON e.seq = f.rowid" if where else f"{table} f"
        join_where = where.replace("WHERE", "AND", 1) if where else ""
        rank, order = (f"bm25({table})", "rank") if ranked else ("-1", "f.rowid DESC")
        try:
            rows = self.db.execute(
                f"SELECT f.rowid, {rank} AS rank FROM {source}"
                f" WHERE {table} MATCH ? {join_where} ORDER BY {order} LIMIT ?",
                [match, *args, limit],
            ).fetchall()
        except sqlite3.OperationalError:
            return  # a query FTS5 cannot parse finds nothing rather than failing the caller
        if not rows:
            return
        top = rows[0][1] or -1e-9  # bm25 is negative: more negative is better
        for seq, rank in rows:
            relevance = float(rank) / top if ranked else 0.5
            scored[seq] = max(scored.get(seq, 0.0), relevance)

    # ---- redact in place (memlane privacy scan --redact) ------------------------------------------

    def fts_holds(self, seq: int, terms: Sequence[str]) -> bool:
        """Does the word index still hold all of ``terms`` for this row? (A redaction must remove them.)"""
        words = [t for t in terms if t]
        if not words:
            return False
        query = " ".join(_quote(t) for t in words)
        try:
            row = self.db.execute(
                "SELECT 1 FROM events_fts WHERE events_fts MATCH ? AND rowid = ?", (query, seq)
            ).fetchone()
        except sqlite3.OperationalError:
            return False
        return row is not None


_MAX_WORDS, _MAX_TRIGRAMS, _MAX_SHORT_CJK = 32, 64, 8
# Past this many whitespace-separated chunks a query has said all it can (its first distinct words are
# kept): scanning on would make a pasted multi-megabyte prompt cost seconds for nothing.
_MAX_QUERY_CHUNKS = 4000


def parse_query(query: str) -> tuple[list[str], list[str], list[str]]:
    """Split a free-text query into FTS5 word phrases, CJK trigrams and too-short CJK words."""
    words: dict[str, None] = {}
    trigrams: dict[str, None] = {}
    short_cjk: dict[str, None] = {}
    parts: dict[str, None] = {}
    for n, match in enumerate(_CHUNK.finditer(query)):
        if n >= _MAX_QUERY_CHUNKS or (
            len(words) >= _MAX_WORDS and len(trigrams) >= _MAX_TRIGRAMS and len(short_cjk) >= _MAX_SHORT_CJK
        ):
            break
        chunk = match.group().strip(_CHUNK_STRIP)
        if not chunk:
            continue
        if keys.has_cjk(chunk):
            if len(chunk) < 3:
                short_cjk[chunk] = None
            else:
                for i in range(len(chunk) - 2):
                    trigrams[_quote(chunk[i : i + 3])] = None
            continue
        if chunk.lower() in STOPWORDS or not any(ch.isalnum() for ch in chunk):
            continue
        words[_quote(chunk)] = None
        # A chunk of several words (pool_manager.py, Shipment(id=881).label_url) is a phrase, and each of
        # its words is a term too, as plain BM25 has it: an event naming ``label_url`` but not the whole
        # chunk still matches, and one with the whole phrase gets the phrase's weight on top.
        # They come after the chunks, with their own cap, so a pasted traceback's paths do not crowd out
        # the error message's words.
        found = _PART.findall(chunk)
        if len(found) > 1 and len(parts) < _MAX_WORDS:
            parts.update((_quote(p), None) for p in found if p.lower() not in STOPWORDS)
    chunks = list(words)[:_MAX_WORDS]
    extra = [p for p in parts if p not in words][:_MAX_WORDS]
    return chunks + extra, list(trigrams)[:_MAX_TRIGRAMS], list(short_cjk)[:_MAX_SHORT_CJK]


def query_stopwords(query: str) -> list[str]:
    """The stop words ``parse_query`` leaves out of the match, lower-cased, each once: retrieval still
    scores them, as plain BM25 does."""
    found: dict[str, None] = {}
    for n, match in enumerate(_CHUNK.finditer(query)):
        if n >= _MAX_QUERY_CHUNKS:
            break
        chunk = match.group().strip(_CHUNK_STRIP).lower()
        if chunk in STOPWORDS:
            found[chunk] = None
    return list(found)


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """One SQLite varint (big-endian 7-bit groups, a ninth byte of 8 bits): (value, next offset)."""
    value = 0
    for n in range(9):
        if at >= len(blob):
            break
        byte = blob[at]
        at += 1
        if n == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value, at


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'
