"""Memory resolutions: which memory a later one replaced, read from structure rather than from similarity.

Each rule pairs an older memory with the later event that proves it stale, and names what was replaced (the
*terms*: removed lines and code fragments, a library's name, a reverted commit's subject):

- **file_region**: a later Edit/MultiEdit/patch of the same file takes out a line (or part of one) that an
  earlier change added or an earlier Read showed, and does not put it back; a later Write of the whole file
  drops one of its lines; a later delete (``*** Delete File``, ``rm``) drops all of them. A line only
  re-indented, re-wrapped or extended still says what it said (one of its words must be gone);
- **quote**: a later edit takes out a code fragment (``pool_size=10``, ``date.today``, an imported module) that
  an earlier memory quotes, and does not put it back (the retrieval rule ``select.retirements``, precomputed);
  a fragment quoted by more than ``MAX_QUOTING`` earlier memories is too common to say what they are about;
- **revert**: ``git revert <sha>`` replaces the exchange that made that commit (its ``git commit`` line in the
  store), or else the change whose file and added lines best match the reverted commit's subject;
- **decision** / **command** / **code**: a decision that removes a name ("switch the task queue from Celery to
  RQ", "remove Celery") or a command that uninstalls it replaces the earlier memories that introduced it (an
  import in changed code, an install, "we picked Celery"); a later re-introduction replaces the removal; a later
  decision on the same subject replaces the earlier one.

The other memories of the old exchange — the answer that described the old code, the session summary — go with
it when they say what was replaced: *wholly* when at least half of their sentences (a summary: of its
``Outcome:``) name one of the terms, *partly* when fewer do ("CI runs pg_isready … Frontend job builds with
node-version: 18": one sentence of four is stale). A prompt that names none of them stays current. Nothing
replaces what came after it or what belongs to its own exchange.

Each rule is found whichever of the two events is projected first (history is often imported out of time
order), and a rule only ever looks at events stored before the one being projected, so projecting the log
event by event, in batches, or all at once (``memlane rebuild``) gives the same rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memlane.knowledge.text import entity_id, fragments, sentences, significant_lines, squash, words
from memlane.store.db import Event, Store
from memlane.store.schema import UNSEARCHED_TYPES

RULES = ("file_region", "quote", "revert", "decision", "command", "code")
MAX_QUOTING = 200  # a fragment in more earlier memories than this is too common to say what they are about
REVERT_WINDOW = 500  # a revert without its commit line is matched against this many latest changes before it
WHOLE = 0.5  # share of a memory's sentences naming what was replaced for it to be wholly replaced
_SUBJECT_STOP = {
    "revert",
    "reverts",
    "fix",
    "fixes",
    "add",
    "adds",
    "added",
    "the",
    "a",
    "an",
    "with",
    "and",
    "for",
    "to",
    "of",
    "in",
    "on",
    "use",
    "uses",
    "from",
    "into",
    "by",
    "when",
    "that",
    "this",
    "is",
    "be",
    "it",
    "at",
    "as",
}
_OUTCOME = re.compile(r"^Outcome: (.*)$", re.MULTILINE)


def rule_of(entry: dict[str, Any]) -> str:
    """The rule a name-based replacement is recorded under, after the entry that proves it."""
    return {"decision": "decision", "command": "command"}.get(entry["entry_type"], "code")


@dataclass
class Terms:
    """What was replaced: ``texts`` (code, compared after squashing whitespace) and ``names`` (words, any case)."""

    texts: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {"texts": sorted(set(self.texts)), "names": sorted(set(self.names))}

    @classmethod
    def of(cls, detail: dict[str, Any]) -> Terms:
        terms = detail.get("terms") or {}
        return cls(list(terms.get("texts") or []), list(terms.get("names") or []))

    def coverage(self, event: Event) -> float:
        """Share of ``event``'s sentences that name a term (a session summary: of its outcome)."""
        text = event.content
        if event.type == "session_summary":
            outcome = _OUTCOME.search(text)
            text = outcome.group(1) if outcome else text
        spans = sentences(text)
        if not spans:
            return 0.0
        names = [re.compile(rf"(?<![\w-]){re.escape(n)}(?![\w-])", re.IGNORECASE) for n in self.names]
        hit = 0
        for start, end in spans:
            sentence = squash(text[start:end])
            if any(t in sentence for t in self.texts) or any(n.search(sentence) for n in names):
                hit += 1
        return hit / len(spans)


class Resolver:
    """Records resolutions and keeps entries' status in step (inside the projector's transaction)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.touched: set[str] = set()  # events whose entries' status must be refreshed
        # The seq of the event being projected: members of an old exchange stored after it join it when they are
        # projected themselves (``inherit``), exactly as if the log were followed event by event.
        self.seq = 0

    # ---- recording ---------------------------------------------------------------------------------------

    def supersede(
        self,
        old: Event,
        old_exchange: str,
        new: Event,
        new_exchange: str,
        rule: str,
        entry_id: str | None,
        terms: Terms,
        detail: dict[str, Any] | None = None,
    ) -> bool:
        """``old`` replaced by ``new``, with the members of ``old``'s exchange that say what was replaced.
        False when the pair is no replacement (one exchange, or ``new`` not strictly later)."""
        if old.id == new.id or old_exchange == new_exchange or not old.ts < new.ts:
            return False
        info = {**(detail or {}), "terms": terms.as_dict()}
        whole = old.type == "tool_observation" or terms.coverage(old) >= WHOLE
        added = self.store.add_resolution(
            old.id,
            new.id,
            rule,
            direct=True,
            partial=not whole,
            old_exchange=old_exchange,
            entry_id=entry_id,
            detail=info,
            ts=new.ts,
        )
        self.touched.add(old.id)
        members = [
            m[0] for m in self.store.exchange_members(old_exchange) if m[0] not in (old.id, new.id) and m[1] <= self.seq
        ]
        for member in self.store.by_ids(members):
            self._member(member, old_exchange, new.id, rule, entry_id, terms, info, new.ts)
        if entry_id is not None:
            for old_entry in self.store.entries_of_event(old.id):
                self.store.add_edge(
                    ("entry", entry_id),
                    "supersedes",
                    ("entry", old_entry["id"]),
                    meta={"rule": rule},
                    event_id=new.id,
                    ts=new.ts,
                )
        return added

    def _member(
        self,
        member: Event,
        exchange: str,
        new_id: str,
        rule: str,
        entry_id: str | None,
        terms: Terms,
        info: dict[str, Any],
        ts: str,
    ) -> None:
        if member.type in UNSEARCHED_TYPES or self.store.wholly_replaced(member.id):
            return  # replaced already (by the first change after it): a long history stays linear
        share = terms.coverage(member)
        if share > 0:
            self.store.add_resolution(
                member.id,
                new_id,
                rule,
                direct=False,
                partial=share < WHOLE,
                old_exchange=exchange,
                entry_id=entry_id,
                detail=info,
                ts=ts,
            )
            self.touched.add(member.id)

    def inherit(self, event: Event, exchange: str) -> None:
        """A memory joining an exchange already replaced goes with it if it says what was replaced."""
        if exchange == event.id or event.type in UNSEARCHED_TYPES:
            return
        for row in self.store.exchange_resolutions(exchange):
            self._member(
                event,
                exchange,
                row["new_id"],
                row["rule"],
                row["entry_id"],
                Terms.of(row["detail"]),
                row["detail"],
                row["ts"],
            )

    def refresh(self) -> None:
        """The effective view (``memory_current``) and the entries of the touched events: ``superseded`` (by the
        entry of their latest whole replacement) or ``active`` (partly replaced memories stay active)."""
        self.store.relink(sorted(self.touched))
        for event_id in sorted(self.touched):
            rows = [r for r in self.store.resolutions_of(event_id) if not r["partial"]]
            if rows:
                self.store.set_entries_status(event_id, "superseded", rows[0]["entry_id"])
            else:
                self.store.set_entries_status(event_id, "active", None)
        self.touched.clear()

    # ---- file_region -------------------------------------------------------------------------------------

    def file_region(self, entry: dict[str, Any], event: Event) -> None:
        body = entry["body"]
        key, exchange = entry["canonical_key"], body["exchange"]
        if body["kind"] in ("edit", "write", "delete"):
            # Only what is still current: a region already replaced stays replaced by the first change (a store
            # where one file was edited 5,000 times would otherwise compare each edit with every earlier one).
            for old in self.store.entries_by_key(key, ("change", "snapshot"), before=event.ts, status="active"):
                terms = replaced_terms(old["body"], body)
                older = self._event(old["event_id"])
                if terms is not None and older is not None:
                    self.supersede(
                        older,
                        old["body"]["exchange"],
                        event,
                        exchange,
                        "file_region",
                        entry["id"],
                        terms,
                        {"path": body["path"]},
                    )
        if body["kind"] in ("edit", "write", "snapshot"):
            for later in self.store.entries_by_key(key, ("change",), after=event.ts):
                terms = replaced_terms(body, later["body"])
                newer = self._event(later["event_id"])
                if terms is not None and newer is not None:
                    self.supersede(
                        event,
                        exchange,
                        newer,
                        later["body"]["exchange"],
                        "file_region",
                        later["id"],
                        terms,
                        {"path": body["path"]},
                    )

    # ---- quote -------------------------------------------------------------------------------------------

    def removed_fragments(self, entry: dict[str, Any], event: Event) -> None:
        """An edit that takes out code fragments: record them (``removes`` edges to code entities) and replace the
        earlier memories that quote them."""
        for fragment in sorted(entry["body"].get("gone") or []):
            code = self._entity("code", fragment, event)
            self.store.add_edge(("entry", entry["id"]), "removes", ("entity", code), event_id=event.id, ts=event.ts)
            quoting = self.store.events_with_phrase(
                words(fragment), below_seq=event.seq, before=event.ts, limit=MAX_QUOTING
            )
            if quoting is None:  # the other direction (``quotes``) skips it too
                self._mark_common(code)
                continue
            for older in quoting:
                if older.type in UNSEARCHED_TYPES or not quotes_fragment(older.content, fragment):
                    continue
                if self.store.wholly_replaced(older.id):
                    continue  # replaced already (by the first change after it): a long history stays linear
                self.supersede(
                    older,
                    self.store.exchange_of(older),
                    event,
                    entry["body"]["exchange"],
                    "quote",
                    entry["id"],
                    Terms(texts=[fragment]),
                    {"fragment": fragment},
                )

    def quotes(self, event: Event, exchange: str, quoted: set[str]) -> None:
        """The other direction: a memory quoting a fragment that a later, already projected edit took out."""
        for fragment in sorted(quoted):
            code = self.store.entity_by_key("code", f"code:{fragment}")
            if code is None or code["state"].get("common"):
                continue
            for edge in self.store.edges_to(code["id"], "removes"):
                remover = self.store.entry(edge["src_id"])
                if remover is None or not remover["ts"] > event.ts:
                    continue
                newer = self._event(remover["event_id"])
                if newer is not None:
                    self.supersede(
                        event,
                        exchange,
                        newer,
                        remover["body"]["exchange"],
                        "quote",
                        remover["id"],
                        Terms(texts=[fragment]),
                        {"fragment": fragment},
                    )

    # ---- decision / command / code: names introduced and removed ------------------------------------------

    def names(self, entry: dict[str, Any], event: Event, introduces: list[str], removes: list[str]) -> None:
        """A removal of a name replaces its earlier introductions, and an introduction its earlier removals —
        whichever of the two was projected first."""
        exchange = entry["body"]["exchange"]
        for relation, names, opposite in (("removes", removes, "introduces"), ("introduces", introduces, "removes")):
            for name in sorted(set(names)):
                lib = self._entity("lib", name, event)
                self.store.add_edge(("entry", entry["id"]), relation, ("entity", lib), event_id=event.id, ts=event.ts)
                for edge in self.store.edges_to(lib, opposite):
                    other = self.store.entry(edge["src_id"])
                    if other is None or other["id"] == entry["id"] or other["ts"] == event.ts:
                        continue
                    terms = Terms(names=[name])
                    if other["ts"] < event.ts and other["status"] == "superseded":
                        continue  # replaced already (by the first change after it): a long history stays linear
                    if other["ts"] < event.ts:  # the other is older: this entry replaces it
                        older = self._event(other["event_id"])
                        if older is not None:
                            self.supersede(
                                older,
                                other["body"]["exchange"],
                                event,
                                exchange,
                                rule_of(entry),
                                entry["id"],
                                terms,
                                {"name": name},
                            )
                    elif (newer := self._event(other["event_id"])) is not None:  # a later one replaces this entry
                        self.supersede(
                            event,
                            exchange,
                            newer,
                            other["body"]["exchange"],
                            rule_of(other),
                            other["id"],
                            terms,
                            {"name": name},
                        )

    def subject(self, entry: dict[str, Any], event: Event, subject: str) -> None:
        """Decisions on one subject ("the task queue"): the later replaces the earlier."""
        for other in self.store.entries_by_key(f"subject:{subject}", ("decision",)):
            if other["id"] == entry["id"] or other["ts"] == event.ts:
                continue
            older_entry, newer_entry = (other, entry) if other["ts"] < event.ts else (entry, other)
            older = event if older_entry is entry else self._event(other["event_id"])
            newer = event if newer_entry is entry else self._event(other["event_id"])
            if older is None or newer is None:
                continue
            terms = Terms(names=[*(older_entry["body"].get("introduces") or []), subject])
            self.supersede(
                older,
                older_entry["body"]["exchange"],
                newer,
                newer_entry["body"]["exchange"],
                "decision",
                newer_entry["id"],
                terms,
                {"subject": subject},
            )

    # ---- revert ------------------------------------------------------------------------------------------

    def revert(self, entry: dict[str, Any], event: Event) -> None:
        """(Re)decide what a revert replaces, from everything projected so far (see the module note)."""
        for old in self.store.delete_resolutions_by(event.id, "revert"):
            self.touched.add(old)
        self.store.delete_edges_from(entry["id"], "supersedes")
        body, exchange = entry["body"], entry["body"]["exchange"]
        subject_words = [w for w in words(body.get("subject") or "") if w not in _SUBJECT_STOP and len(w) > 3]
        found = False
        for sha in body.get("shas") or []:
            for commit in self.store.entries_by_key(f"commit:{sha}", ("commit",), before=event.ts):
                older = self._event(commit["event_id"])
                if older is None:
                    continue
                found = True
                texts = [t for c in self._exchange_changes(commit["body"]["exchange"]) for t in sorted(fragments(c))]
                self.supersede(
                    older,
                    commit["body"]["exchange"],
                    event,
                    exchange,
                    "revert",
                    entry["id"],
                    Terms(texts=texts, names=subject_words),
                    {"sha": sha},
                )
        if found or not body.get("subject"):
            return
        best = self._best_change(body["subject"], event.ts)
        older = self._event(best["event_id"]) if best is not None else None
        if best is not None and older is not None:
            terms = Terms(texts=sorted(fragments(best["body"].get("added") or "")), names=subject_words)
            self.supersede(
                older,
                best["body"]["exchange"],
                event,
                exchange,
                "revert",
                entry["id"],
                terms,
                {"subject": body["subject"]},
            )

    def reverts_after(self, entry: dict[str, Any]) -> None:
        """A change or commit projected after a revert that may be about it: decide that revert again (only when
        it names the reverted commit, or could match the revert's subject)."""
        body = entry["body"]
        for revert in self.store.entries_by_key("revert", ("commit",), after=entry["ts"]):
            shas = revert["body"].get("shas") or []
            if entry["entry_type"] == "commit":
                relevant = bool(shas) and any(sha in shas for sha in body.get("shas") or [])
            else:
                relevant = subject_score(revert["body"].get("subject") or "", body) > 0
            event = self._event(revert["event_id"]) if relevant else None
            if event is not None:
                self.revert(revert, event)

    def _exchange_changes(self, exchange: str) -> list[str]:
        """The added text of the changes an exchange made (what its commit held)."""
        out: list[str] = []
        for member, _seq, kind, _ts in self.store.exchange_members(exchange):
            if kind == "tool_observation":
                out.extend(
                    e["body"].get("added") or ""
                    for e in self.store.entries_of_event(member)
                    if e["entry_type"] == "change"
                )
        return out

    def _best_change(self, subject: str, before: str) -> dict[str, Any] | None:
        best: tuple[int, str, dict[str, Any]] | None = None
        for change in self.store.entries_of_type("change", before=before, limit=REVERT_WINDOW):
            score = subject_score(subject, change["body"])
            if score and (best is None or (score, change["ts"]) > (best[0], best[1])):
                best = (score, change["ts"], change)
        return best[2] if best else None

    # ---- helpers -----------------------------------------------------------------------------------------

    def _mark_common(self, entity: str) -> None:
        found = self.store.entity(entity)
        if found is not None and not found["state"].get("common"):
            found["state"]["common"] = True
            self.store.put_entity(found)

    def _event(self, event_id: str) -> Event | None:
        found = self.store.by_ids([event_id])
        return found[0] if found else None

    def _entity(self, entity_type: str, name: str, event: Event) -> str:
        key = f"{entity_type}:{name}"
        found = self.store.entity_by_key(entity_type, key)
        if found is not None:
            return str(found["id"])
        eid = entity_id(entity_type, key)
        self.store.put_entity(
            {
                "id": eid,
                "entity_type": entity_type,
                "canonical_key": key,
                "title": name,
                "title_norm": name.lower(),
                "first_event_id": event.id,
                "last_event_id": event.id,
                "created_ts": event.ts,
                "updated_ts": event.ts,
            }
        )
        return eid


def quotes_fragment(text: str, fragment: str) -> bool:
    """Whether ``text`` quotes a code fragment (``fragments``' definition; a substring test first, cheap)."""
    name, eq, value = fragment.partition("=")
    if (eq and (name not in text or value not in text)) or (not eq and fragment not in text):
        return False
    return fragment in fragments(text)


def subject_score(subject: str, change: dict[str, Any]) -> int:
    """How many of a reverted commit's subject words a change's file path and added lines hold: 0 unless at
    least two and at least half of them."""
    wanted = {w for w in words(subject) if w not in _SUBJECT_STOP and len(w) > 2}
    if len(wanted) < 2 or change.get("kind") in (None, "delete", "snapshot"):
        return 0
    have = set(words(str(change.get("path") or "") + "\n" + (change.get("added") or "")))
    score = len(wanted & have)
    return score if score >= 2 and score * 2 >= len(wanted) else 0


def replaced_terms(old: dict[str, Any], new: dict[str, Any]) -> Terms | None:
    """What change ``new`` took out of what ``old`` added or showed, or None if nothing (see ``file_region``).

    A line counts as taken out when it is no longer in the new text *and* one of its words is gone too: a line
    only re-indented, re-wrapped or extended (``environment=ENV)`` → ``environment=ENV, ignore_errors=[…])``)
    still says what it said.
    """
    if new["kind"] == "delete":
        return Terms(texts=[new["path"]])
    shown = old.get("added") or ""
    if not shown.strip():
        return None
    after = squash(new.get("added") or "")
    after_words = set(words(after))
    if new["kind"] == "write":
        gone = [line for line in significant_lines(shown) if line not in after and not set(words(line)) <= after_words]
    else:
        before = squash(shown)
        gone = [
            line
            for line in significant_lines(new.get("removed") or "")
            if line in before and line not in after and not set(words(line)) <= after_words
        ]
    if not gone:
        return None
    texts = gone + sorted(fragments("\n".join(gone)) - fragments(new.get("added") or ""))
    return Terms(texts=texts)
