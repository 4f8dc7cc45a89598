"""The search service: holds the embedding model and each project's vector index, warm.

Used in-process by the CLI and MCP server, and by the daemon (which is what keeps it warm for hooks).
Without the vector stack (or while the model loads) it answers from full-text search alone.

``via_daemon=True`` (the CLI's ``search`` and the MCP server) asks the running daemon first, so there is
one warm model per user instead of one cold load per command. When the daemon is down this call is answered
in-process, and the daemon is started, detached, for the next call only where a setting allows it:
``daemon.autostart`` for the MCP server (it lives as long as a session), ``daemon.search_starts`` (off by
default: a search is a read, and reads start nothing) for ``memlane search``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from memlane import config
from memlane.logs import log
from memlane.retrieval import answers, when
from memlane.retrieval.cjk import has_hangul
from memlane.retrieval.hybrid import Hit, Retriever
from memlane.retrieval.select import Injection, by_support, choose

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    # Memory owns the engine (Memory.search makes one); the engine only takes a Memory as an argument,
    # so importing memory.py at run time would close a circle.
    from memlane.memory import Memory
    from memlane.retrieval.speakers import People


SPAWN_WAIT_S = 8.0  # how long a search waits for a daemon its engine started (a cold daemon is up in ~1-3 s)
PREPARED_KEEP = 16  # prompts whose query embedding was started ahead of their search (a few per session)


def _progress(message: str) -> None:
    """A status line on stderr for people (a model load can take a moment); never for pipes or tests."""
    import sys

    if sys.stderr.isatty():
        sys.stderr.write(message + "\n")
        sys.stderr.flush()


def fitted_config(cfg: config.Config, embedder: Any) -> config.Config:
    """``cfg`` with the embedder's own fitted retrieval values where the user kept the shipped defaults.

    Weights and similarity thresholds are fitted to one model's cosine scale (multilingual-e5-small's unrelated
    texts sit at ~0.8, MiniLM's at ~0.2): with MiniLM's weights e5 injected almost nothing. A value the user
    set (config file or environment) always wins.
    """
    fitted = getattr(embedder, "fitted", None)
    if not fitted:
        return cfg
    shipped = config.RetrievalConfig()
    return _with_retrieval(cfg, {k: v for k, v in fitted.items() if getattr(cfg.retrieval, k) == getattr(shipped, k)})


def _with_retrieval(cfg: config.Config, changes: dict[str, Any]) -> config.Config:
    """``cfg`` with these retrieval values (a copy; ``cfg`` itself when there are none)."""
    if not changes:
        return cfg
    import copy

    out = copy.copy(cfg)
    out.retrieval = copy.copy(cfg.retrieval)
    for key, value in changes.items():
        setattr(out.retrieval, key, value)
    return out


SHAPE_EVENTS = 2_000  # the latest events whose types say what kind of store it is
DIALOGUE_TOOL_SHARE = 0.02  # a store whose latest events are almost all prompts and answers is a dialogue
DIALOGUE_MIN_EVENTS = 50  # ...once it has this many: a new coding project starts with a few chats


def is_dialogue(types: dict[str, int]) -> bool:
    """Whether a store's latest events (type → count) are a dialogue: prompts and answers, (almost) no tool calls."""
    total = sum(types.values())
    return total >= DIALOGUE_MIN_EVENTS and types.get("tool_observation", 0) < DIALOGUE_TOOL_SHARE * total


def store_is_dialogue(store: Any) -> bool:
    """Whether ``store``'s latest events are a dialogue (False when its shape cannot be read)."""
    try:
        return is_dialogue(store.recent_type_counts(SHAPE_EVENTS))
    except Exception as exc:  # noqa: BLE001 - without its shape a store gets the default line
        log("retrieval", "warning", f"store shape unknown: {exc!r}")
        return False


def answer_wanted(prompt: str, dialogue: bool) -> str | None:
    """What a question in a store of dialogue asks for that a memory in full must hold (``select.fitting``: a
    number, for "how many", "how much", 몇, 얼마), or None. Only in a store of dialogue: in one of code it was
    measured to change nothing."""
    kind = answers.asks(prompt) if dialogue else None
    return kind if kind in answers.REQUIRED else None


def tiers(prompt: str, hits: list[Hit], index: Any, cfg: config.Config, store: Any, dialogue: bool) -> Injection:
    """The two tiers for ``prompt``'s hits (``select.choose``) with what the prompt itself says in a store of
    dialogue: a question about what happened wants the older memories on its subject too, and a question for a
    number a memory in full that holds one. The daemon and ``benchmarks/injection.py`` both choose through it."""
    history = dialogue and when.asks_about_past(prompt)
    return choose(hits, index, cfg, store, history, answer_wanted(prompt, dialogue))


def shaped_config(cfg: config.Config, dialogue: bool) -> config.Config:
    """``cfg`` for the store's shape: in a store of dialogue the index tier's line ``retrieval.dialogue_suggest_lift``
    and one full item per session (``retrieval.dialogue_session_items``), unless the user set ``suggest_lift`` or
    ``session_items`` themselves.

    In a store of code memories the answer stands well out of its background (identifiers, error text); in a
    long conversation every turn is about the same few people and plans and the turn that answers stands out
    less, so at the same line the right memory stayed under it (conversations dev: reachable 0.37 at 1.0, 0.43
    at 0.5; LongMemEval-S dev 0.78 → 0.83), while the coding replay's no-match prompts needed 1.0 to stay
    near-silent. In a long conversation one session's exchanges all stand out of the background while one of them
    answers (LongMemEval-S's "what did you recommend in our chat about …"): its best item stays in full and the
    others are offered as index lines (full-tier precision: LongMemEval-S dev 0.45 → 0.60, test 0.57 → 0.92;
    conversations dev 0.43 → 0.53, test 0.41 → 0.47; the coding replay, where a session's fix and its error are
    both wanted, keeps every item).
    """
    rcfg = cfg.retrieval
    if not dialogue:
        return cfg
    default = config.RetrievalConfig()
    changes: dict[str, Any] = {}
    if rcfg.suggest_lift == default.suggest_lift:
        changes["suggest_lift"] = rcfg.dialogue_suggest_lift
    if rcfg.session_items == default.session_items:
        changes["session_items"] = rcfg.dialogue_session_items
    if rcfg.answer_weight == default.answer_weight:
        changes["answer_weight"] = rcfg.dialogue_answer_weight
    return _with_retrieval(cfg, changes)


class Engine:
    def __init__(
        self,
        cfg: config.Config | None = None,
        *,
        vectors: bool = True,
        via_daemon: bool = False,
        start_daemon: bool | None = None,
    ) -> None:
        self.cfg = cfg or config.load()
        self.vectors = vectors
        self.via_daemon = via_daemon
        # Whether a daemon that is down is started for the next call (None: ``daemon.autostart``).
        self.start_daemon = self.cfg.daemon.autostart if start_daemon is None else start_daemon
        self.daemon_answers = 0  # searches the daemon answered (for status lines and tests)
        self._embedder: Any = None
        self._indexes: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.model_error: str | None = None
        self._spawned = 0.0  # when this engine started a daemon (monotonic), so a search can wait for it
        self._prepared: dict[str, Any] = {}  # prompt → future of its query vector (see ``prepare``)
        self.prepared = {"started": 0, "used": 0}  # for /api/health: does the early start pay off?
        from memlane.retrieval import speakers
        from memlane.retrieval.loanwords import Lexicons
        from memlane.retrieval.per_store import PerStore

        self.lexicons = Lexicons()  # each project's English words for Korean loanwords, built off the search path
        self.speakers = PerStore(speakers.of_store, "speakers' names")  # of dialogue stores, likewise
        self._shapes: dict[str, tuple[bool, int]] = {}  # project → (a store of dialogue, its size when read)

    @property
    def embedder(self) -> Any:
        """The embedding model, loaded on first use (None when vectors are off or it cannot load)."""
        if not self.vectors or self.model_error:
            return None
        with self._lock:
            if self._embedder is None:
                if self.via_daemon:
                    _progress("loading the embedding model…")
                try:
                    from memlane.embed import get_embedder

                    self._embedder = get_embedder(self.cfg.embedding)
                except Exception as exc:  # noqa: BLE001 - degrade to text search, say why
                    self.model_error = f"{type(exc).__name__}: {exc}"
                    log("retrieval", "error", f"embedding model unavailable, text search only: {self.model_error}")
                    return None
            return self._embedder

    def index(self, project_id: str) -> Any:
        embedder = self.embedder
        if embedder is None:
            return None
        with self._lock:
            if project_id not in self._indexes:
                from memlane.vectors import VectorIndex

                self._indexes[project_id] = VectorIndex(project_id, embedder.version, embedder.dim, self.cfg.vectors)
            return self._indexes[project_id]

    def warm(self, project_id: str | None) -> None:
        """Get ready for a first search that has not come yet (the MCP server calls this as it starts).

        With the daemon: start it if it is down (and ``start_daemon`` allows it), so the session's first search
        finds one warm model. Without one: load the model and open the index here, in the background, so the first
        search does not wait for them.
        """
        if not self.vectors:
            return
        if self.via_daemon:
            from memlane.daemon import state

            if state.read_info():
                return
            if self.start_daemon:
                self._start_daemon()
                return
        index = self.index(project_id) if project_id else None
        if index is not None:
            index.table()
        embedder = self.embedder
        if embedder is not None:
            embedder.embed_query("warm up")  # the first pass allocates what later ones reuse

    def warm_in_background(self, project_dir: str) -> None:
        """``warm`` on a thread, for the project of ``project_dir``; a failure only leaves the first search slower."""

        def run() -> None:
            try:
                import os

                from memlane import project

                self.warm(project.identify(os.path.realpath(project_dir)).id)
            except Exception as exc:  # noqa: BLE001 - a warm-up is an extra; the search path reports real errors
                log("retrieval", "warning", f"warm-up skipped: {exc!r}")

        threading.Thread(target=run, name="memlane-warm", daemon=True).start()

    def _start_daemon(self) -> None:
        from memlane.daemon import spawn

        try:
            if spawn.start_detached():
                self._spawned = time.monotonic()
        except OSError as exc:
            log("retrieval", "warning", f"could not start the daemon: {exc!r}")

    def index_for(self, memory: Memory) -> Any:
        """The project's vectors where its store is: LanceDB beside SQLite, pgvector beside PostgreSQL."""
        if getattr(memory.store, "backend", "sqlite") != "postgres":
            return self.index(memory.project.id)
        embedder = self.embedder
        if embedder is None:
            return None
        from memlane.store.postgres.vectors import PgVectorIndex

        return PgVectorIndex(memory.store, embedder.version, embedder.dim, self.cfg.vectors)

    def retriever(self, memory: Memory, query: str = "") -> Retriever:
        index = self.index_for(memory) if self.vectors else None
        embedder = self.embedder if index is not None else None
        lexicon = self.lexicons.get(memory.project.id, memory.store) if has_hangul(query) else None
        cfg = self.shaped(memory, fitted_config(memory.config, embedder))
        return Retriever(memory.store, cfg, embedder, index, lexicon, self.people(memory))

    def people(self, memory: Memory) -> People | None:
        """The names of the people talking in a dialogue store (``speakers``), None for other stores."""
        return self.speakers.get(memory.project.id, memory.store) if self.is_dialogue(memory) else None

    def is_dialogue(self, memory: Memory) -> bool:
        """``store_is_dialogue`` for the project's store, read again once it has grown by a tenth (or 200 events):
        a few thousand rows, not on every prompt."""
        size = memory.store.size_estimate()
        with self._lock:
            known = self._shapes.get(memory.project.id)
        if known is None or size > max(known[1] * 1.1, known[1] + 200):
            known = (store_is_dialogue(memory.store), size)
            with self._lock:
                self._shapes[memory.project.id] = known
        return known[0]

    def shaped(self, memory: Memory, cfg: config.Config) -> config.Config:
        """``shaped_config`` for the project's store."""
        return shaped_config(cfg, self.is_dialogue(memory))

    def search(self, memory: Memory, query: str, **filters: Any) -> list[Hit]:
        query_vector = filters.pop("query_vector", None)  # in-process only: never sent to a daemon
        if self.via_daemon and self.vectors:
            hits = self._daemon_search(memory, query, filters)
            if hits is not None:
                self.daemon_answers += 1
                return hits
        return self.retriever(memory, query).search(query, query_vector=query_vector, **filters)

    def _daemon_search(self, memory: Memory, query: str, filters: dict[str, Any]) -> list[Hit] | None:
        """The daemon's answer, with events read from our own store; None when the daemon is down or failed."""
        from memlane.daemon import client, state

        if not state.read_info() and not self._daemon_coming():
            if self.start_daemon:
                self._start_daemon()  # warm for the next command; this one does not wait for it
            return None
        # Other projects (cross_project) are asked for one by one by Memory.search, each with its own store.
        body = {"project_id": memory.project.id, "query": query, "cross_project": False,
                **{k: v for k, v in filters.items() if v}}  # fmt: skip
        if "types" in body:
            body["types"] = list(body["types"])
        # Generous: a daemon that has just started may still be loading the model (well under a second on the
        # numpy runtime); a local load would cost more than waiting for it.
        answer = client.call("/api/search", body, deadline_ms=20_000)
        if answer is None or not isinstance(answer.get("results"), list):
            return None
        hits = []
        for row in answer["results"]:
            event = memory.store.get(str(row.get("id", "")))
            if event is not None:  # forgotten since the daemon read it
                hit = Hit(event, float(row["score"]), dict(row.get("sources") or {}), str(row["confidence"]))
                hit.shown = row.get("shown") or None
                hits.append(hit)
        return hits

    def _daemon_coming(self) -> bool:
        """True once a daemon this engine started a moment ago is up (waiting up to SPAWN_WAIT_S for it): its
        model loads in well under a second, cheaper than a second model loaded here."""
        from memlane.daemon import state

        if not self._spawned or time.monotonic() - self._spawned > SPAWN_WAIT_S:
            return False
        while time.monotonic() - self._spawned < SPAWN_WAIT_S:
            if state.read_info():
                return True
            time.sleep(0.05)
        return False

    def prepare(self, memory: Memory, prompt: str, hold: Callable[[Future[Any]], None] | None = None) -> bool:
        """Start embedding a prompt that ``relevant`` will be asked about in a moment; True if started.

        The UserPromptSubmit hook sends its prompt here as soon as it has read it, then stores the prompt
        and asks for the memories. The query vector and its nearest neighbours are found early: they depend
        on nothing but the prompt and the vector table (the neighbours are reused only if the table has not
        changed since), while the full-text side reads word statistics that the stored prompt is part of, so
        it waits for the real question. The answer is the same as without ``prepare``; it comes sooner.
        """
        cfg = memory.config
        if len(prompt.strip()) < cfg.injection.min_prompt_chars or not self._vectors_for(memory, prompt):
            return False
        from memlane.retrieval.hybrid import Prepared, _executor, searched

        embedder = self.embedder  # before the lock: the property takes it too
        index = self.index(memory.project.id)
        # The hook's search excludes the one prompt event it has just stored, so it asks for one more.
        k = fitted_config(cfg, embedder).retrieval.candidates + 1
        query = searched(prompt, self.people(memory))  # what the search will embed (before the lock: it takes it)
        with self._lock:
            if prompt not in self._prepared:
                self._prepared[prompt] = future = _executor().submit(Prepared.make, embedder, index, query, k)
                self.prepared["started"] += 1
                if hold is not None:  # the daemon's worker pauses its passes until this embedding is done
                    hold(future)
                while len(self._prepared) > PREPARED_KEEP:  # prompts never asked about (a hook that died)
                    self._prepared.pop(next(iter(self._prepared)))
        return True

    def mode(self, memory: Memory, query: str) -> str:
        """How a search for ``query`` is answered here: ``hybrid`` (words and vectors) or ``fts`` (words only)."""
        return "hybrid" if self.vectors and self._vectors_for(memory, query) else "fts"

    def _vectors_for(self, memory: Memory, prompt: str) -> bool:
        """Whether a search for ``prompt`` uses the vector side (the rule ``Retriever.search`` follows)."""
        from memlane.retrieval.hybrid import uses_vectors

        if self.embedder is None or self.index(memory.project.id) is None:
            return False
        return uses_vectors(prompt, memory.config.retrieval, self.embedder)

    def _take_prepared(self, prompt: str) -> Any:
        with self._lock:
            future = self._prepared.pop(prompt, None)
            self.prepared["used"] += future is not None
            return future

    def relevant(self, memory: Memory, prompt: str, exclude_ids: list[str] | None = None) -> Injection:
        """What a prompt is given: the two tiers (full and index lines) of ``select.choose``."""
        cfg = memory.config
        prepared = self._take_prepared(prompt)
        if len(prompt.strip()) < cfg.injection.min_prompt_chars:
            return Injection()
        if self.embedder is None or self.index_for(memory) is None:
            # Without vectors: the text-only model and the same tiers, as the hooks' fallback uses.
            from memlane.capture.inject import prompt_hits

            return prompt_hits(memory.store, prompt, cfg, exclude_ids or [])
        from memlane.capture.inject import candidates_kept

        # Not current_first: choose() leaves superseded memories out by the same rule.
        hits = self.search(
            memory,
            prompt,
            limit=cfg.retrieval.candidates,
            exclude_ids=exclude_ids or [],
            query_vector=prepared,
            current_first=False,
        )
        hits = by_support(hits, candidates_kept(cfg))
        # The tiers' similarity thresholds, as the search's weights, and the index line for the store's shape.
        cfg = self.shaped(memory, fitted_config(cfg, self.embedder))
        if cfg.retrieval.cross_project:
            hits.extend(self._other_projects(memory, prompt, cfg.injection.max_results))
            hits.sort(key=lambda h: -h.score)
        return tiers(prompt, hits, self.index_for(memory), cfg, memory.store, self.is_dialogue(memory))

    def _other_projects(self, memory: Memory, prompt: str, limit: int) -> list[Hit]:
        """Only when the user enabled ``retrieval.cross_project``: memories of their other projects."""
        from memlane import project

        hits: list[Hit] = []
        for entry in project.known_projects()[:20]:
            if entry.get("id") == memory.project.id:
                continue
            try:
                with Memory.open(project_id=str(entry["id"]), cfg=self.cfg, create=None) as other:
                    hits.extend(self.search(other, prompt, limit=limit, current_first=False))
            except Exception as exc:  # noqa: BLE001 - one broken store must not break injection
                log("retrieval", "warning", f"cross-project search skipped {entry.get('id')}: {exc!r}")
        return hits
