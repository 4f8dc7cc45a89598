"""``feature-list.md`` and ``domain-definition.md`` → progress.json. Stdlib only (runs at SessionEnd).

Both parsers are line-based and forgiving: any heading level, ``-``/``*``/``1.`` lists, ``[x]``
checkboxes, markdown tables, ``(3pt)``/``points: 3``/``3점`` notations, English or Korean labels.
Every non-blank line is either understood or reported back as a warning with its line number;
nothing is dropped silently. The formats are documented in docs/workflow.md.

Why one module (~780 lines): the two documents share one line walker (``_Walker``), one attribute
syntax (points, status, priority, keyed fields) and one warning list, and this is the single place their
formats (docs/workflow.md) are read. The seam there is, parsing versus ``apply`` into progress.json
(the last section), would leave ``apply`` a 130-line module that only ``parse``'s output feeds.
"""

from __future__ import annotations

import os
import re

from memlane.workflow import progress as prog

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KINDS = ("feature-list", "domain-definition")
_ID = r"[A-Z][A-Z0-9_]*(?:-[A-Z0-9_]+)*-\d+[a-z]?"
_ID_RE = re.compile(rf"^{_ID}$")
_ITEM_ID = re.compile(rf"^(?:\*\*|`|\[)?({_ID})(?:\*\*|`|\])?(?=$|[\s:.|)—–-])")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LIST = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_CHECK = re.compile(r"^\[([ xX~/!\-])\]\s*(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LABEL_PREFIX = re.compile(rf"^(?:feature|task|기능|작업|태스크)\s*[:：]\s*(?={_ID})", re.I)
_SETEXT = re.compile(r"^\s*(=+|-+)\s*$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_KEYVAL = re.compile(r"^\**([A-Za-z가-힣][A-Za-z가-힣 ]{0,24}?)\**\s*[:：]\s*(.*)$")
_PHASE = re.compile(
    r"^(?:\d+[.)]\s*)?(phase|페이즈|sprint|스프린트|milestone|마일스톤|단계|stage)\s*[-_ ]?\s*([0-9]+|[A-Za-z])\b"
    r"\s*(?:[:：.)\-–—]\s*|\(\s*)?(.*?)\)?\s*$",
    re.I,
)
_PHASE_KO = re.compile(r"^(\d+)\s*(?:단계|차)\s*(?:[:：.\-–—]\s*|\(\s*)?(.*?)\)?\s*$")
_PHASE_PREFIX = {"phase": "phase", "페이즈": "phase", "단계": "phase", "stage": "phase", "sprint": "sprint"}
_PHASE_PREFIX |= {"스프린트": "sprint", "milestone": "milestone", "마일스톤": "milestone"}
_CODE = r"[A-Z][A-Z0-9_]{1,19}"
_DOMAIN_PATTERNS = (  # the code is case-sensitive (upper case), the "domain" label is not
    re.compile(rf"^(?:(?i:domain)|도메인)?\s*[:：]?\s*({_CODE})\s*(?:[:：\-–—]\s*|\(\s*)(.+?)\)?\s*$"),
    re.compile(rf"^(?:(?i:domain)|도메인)?\s*[:：]?\s*(.+?)\s*[(\[]\s*({_CODE})\s*[)\]]\s*$"),
    re.compile(rf"^(?:(?i:domain)|도메인)\s*[:：]?\s*({_CODE})$"),
    re.compile(rf"^({_CODE})$"),
)
_POINTS = (
    re.compile(r"[(\[]?\s*(\d+(?:\.\d+)?)\s*(?:story\s*points?|pts?|points?|sp|점|포인트)(?![A-Za-z])\s*[)\]]?", re.I),
    re.compile(r"[(\[]?\s*(?:story\s*points?|points?|pts?|sp|포인트|점수)\s*[:=]\s*(\d+(?:\.\d+)?)\s*[)\]]?", re.I),
)
_PRIORITY_WORDS = {
    "critical": "critical", "긴급": "critical", "최상": "critical", "p0": "critical",
    "high": "high", "높음": "high", "상": "high", "p1": "high",
    "medium": "medium", "mid": "medium", "normal": "medium", "중간": "medium", "보통": "medium", "중": "medium",
    "p2": "medium", "low": "low", "낮음": "low", "하": "low", "p3": "low",
    "🔴": "critical", "🟠": "high", "🟡": "medium", "🟢": "low",
}  # fmt: skip
_STATUS_WORDS = {
    "done": "done", "complete": "done", "completed": "done", "finished": "done", "완료": "done", "✅": "done",
    "✔": "done", "✔️": "done", "☑": "done", "☑️": "done", "x": "done", "[x]": "done", "y": "done", "yes": "done",
    "in progress": "in_progress", "in_progress": "in_progress", "wip": "in_progress", "doing": "in_progress",
    "진행": "in_progress", "진행중": "in_progress", "진행 중": "in_progress", "🔄": "in_progress",
    "🚧": "in_progress", "⏳": "in_progress", "[~]": "in_progress", "[/]": "in_progress", "[-]": "in_progress",
    "blocked": "blocked", "차단": "blocked", "보류": "blocked", "막힘": "blocked", "⛔": "blocked", "🚫": "blocked",
    "[!]": "blocked", "pending": "pending", "todo": "pending", "to do": "pending", "대기": "pending",
    "미착수": "pending", "예정": "pending", "⬜": "pending", "[ ]": "pending", "": "pending", "-": "pending",
    "n": "pending", "no": "pending",
}  # fmt: skip
_WEAK = {"", "-", "[ ]", "n", "no", "⬜"}  # "not done": never moves an item back
_STATUS_EMOJI = re.compile(r"(✅|✔️?|☑️?|🔄|🚧|⏳|⛔|🚫|⬜)")
_LEAD_EMOJI = re.compile(r"^\s*(✅|✔️?|☑️?|🔄|🚧|⏳|⛔|🚫|⬜)\s*")
_LEAD = re.compile(r"^(?:\[[ xX~/!\-]\]\s*)?(?:(?:✅|✔️?|☑️?|🔄|🚧|⏳|⛔|🚫|⬜)\s*)?")
_LABELS = {
    "id": ("id", "번호", "코드", "code", "key", "feature id", "task id", "기능 id", "작업 id", "도메인 코드", "식별자"),
    "name": ("name", "title", "기능명", "작업명", "이름", "제목", "도메인명", "도메인 이름", "feature name"),
    "feature_col": ("feature", "기능", "features"),  # a name in a feature table, a parent id in a task table
    "task_col": ("task", "작업", "태스크"),
    "domain": ("domain", "도메인"),
    "category": ("category", "카테고리", "분류", "type", "유형"),
    "priority": ("priority", "우선순위", "prio", "중요도"),
    "points": ("points", "point", "pts", "pt", "sp", "story points", "포인트", "점수", "estimate", "추정"),
    "status": ("status", "상태", "done", "완료", "진행", "진행 상태"),
    "depends": ("depends", "depends on", "dependencies", "deps", "의존성", "의존", "선행", "선행 작업", "after"),
    "featureId": ("parent", "상위 기능", "기능 id", "feature_id", "featureid"),
    "phase": ("phase", "페이즈", "단계", "sprint", "스프린트", "milestone", "마일스톤"),
    "note": ("note", "notes", "비고", "메모", "remarks", "comment", "comments"),
    "description": ("description", "설명", "desc", "개요", "책임", "responsibility", "scope", "범위"),
    "features": ("기능 목록", "포함 기능", "feature ids", "관련 기능"),
}
_KEYS = {label: key for key, labels in _LABELS.items() for label in labels}


class DocError(prog.ProgressError):
    """A document that cannot be imported at all (unreadable, unknown kind)."""


class Parsed:
    """What a document says: partial items, plus the lines that were not understood."""

    def __init__(self, kind: str, source: str) -> None:
        self.kind = kind
        self.source = source
        self.features: dict[str, dict[str, Any]] = {}
        self.tasks: dict[str, dict[str, Any]] = {}
        self.phases: dict[str, dict[str, Any]] = {}
        self.domains: dict[str, dict[str, Any]] = {}
        self.warnings: list[tuple[int, str, str]] = []

    def warn(self, line_no: int, text: str, reason: str) -> None:
        self.warnings.append((line_no, text.strip()[:120], reason))


# ---- attributes inside one line ------------------------------------------------------------------


def points_value(text: str) -> int | float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def status_of(text: str) -> tuple[str | None, bool]:
    """(status, weak) for a status word/emoji/checkbox, or (None, False) when not one."""
    word = " ".join(text.strip().strip("*`").casefold().split())
    word = word.strip("()[]") if word not in ("[ ]", "[x]", "[~]", "[/]", "[-]", "[!]") else word
    if word in _STATUS_WORDS:
        return _STATUS_WORDS[word], word in _WEAK
    return None, False


def priority_of(text: str) -> str | None:
    return _PRIORITY_WORDS.get(text.strip().strip("*`()[]").casefold())


def _take(pattern: re.Pattern[str], text: str) -> tuple[str | None, str]:
    match = pattern.search(text)
    if not match:
        return None, text
    return match.group(1), (text[: match.start()] + " " + text[match.end() :])


_ATTR = re.compile(
    r"(?:^|[\s(\[,;|—–])(priority|우선순위|category|카테고리|분류|status|상태|points?|pts|포인트|점수|"
    r"depends(?:\s+on)?|deps|dependencies|after|의존성?|선행(?:\s*작업)?|note|notes|메모|비고|domain|도메인|"
    r"phase|페이즈|단계)\s*[:=]\s*",
    re.I,
)


def _keyed(text: str) -> tuple[dict[str, str], str]:
    """``key: value`` pairs inside a line (values run to the next key, ``,``/``;``/``)`` or the end)."""
    found: dict[str, str] = {}
    matches = list(_ATTR.finditer(text))
    if not matches:
        return found, text
    rest = text[: matches[0].start()]
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        raw = text[match.end() : end]
        key = _KEYS.get(match.group(1).casefold(), match.group(1).casefold())
        key = {"point": "points", "pts": "points", "의존": "depends", "선행": "depends"}.get(key, key)
        if key in ("note", "description"):
            value, tail = raw.strip(), ""
        elif key == "depends":
            dep = re.match(rf"\s*((?:{_ID})(?:\s*[,/&]\s*(?:{_ID}))*)", raw)
            value, tail = (dep.group(1), raw[dep.end() :]) if dep else ("", raw)
        else:
            cut = re.search(r"[,;)\]|]", raw)
            value, tail = (raw[: cut.start()], raw[cut.start() :]) if cut else (raw, "")
        found[key] = value.strip().strip("*`")
        rest += " " + tail
    return found, rest


def attributes(text: str) -> tuple[dict[str, Any], list[str]]:
    """Split an item's text into fields (name, points, priority, …); second value: problems found."""
    fields: dict[str, Any] = {}
    problems: list[str] = []
    keyed, text = _keyed(text)
    for key, value in keyed.items():
        _set_keyed(fields, key, value, problems)
    if "points" not in fields:
        for pattern in _POINTS:
            number, text = _take(pattern, text)
            if number is not None:
                fields["points"] = points_value(number)
                break
    text = _bracketed(fields, text)
    emoji, text = _take(_STATUS_EMOJI, text)
    if emoji and "status" not in fields:
        fields["status"], fields["weak"] = status_of(emoji)
    bare = re.search(r"(?<![A-Za-z0-9])(P[0-3])(?![A-Za-z0-9])", text)
    if bare and "priority" not in fields:
        fields["priority"] = priority_of(bare.group(1))
        text = text[: bare.start()] + text[bare.end() :]
    _name(fields, text)
    return fields, problems


def _set_keyed(fields: dict[str, Any], key: str, value: str, problems: list[str]) -> None:
    if key == "points":
        number = re.match(r"\s*(\d+(?:\.\d+)?)", value)
        if number:
            fields["points"] = points_value(number.group(1))
        else:
            problems.append(f"points {value!r} is not a number")
    elif key == "priority":
        fields["priority"] = priority_of(value)
        if fields["priority"] is None:
            problems.append(f"priority {value!r} is not one of {', '.join(prog.PRIORITIES)}")
    elif key == "status":
        fields["status"], fields["weak"] = status_of(value)
        if fields["status"] is None:
            problems.append(f"status {value!r} is not understood")
    elif key == "depends":
        fields["dependencies"] = re.findall(_ID, value)
    elif key == "phase":
        fields["phase"] = phase_id(value) or value
    elif key == "domain":
        fields["domain"] = value.split()[0] if value.split() else None
    elif key in ("category", "note", "description"):
        fields[key] = value


def _bracketed(fields: dict[str, Any], text: str) -> str:
    """``[high]``, ``(Core)``, ``[완료]``: priority, status or category in brackets."""

    def repl(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        if not inner:
            return " "
        priority = priority_of(inner)
        if priority and "priority" not in fields:
            fields["priority"] = priority
            return " "
        status, weak = status_of(inner)
        if status and "status" not in fields and inner.casefold() not in ("-", "x", "y", "n", "no", "yes"):
            fields["status"], fields["weak"] = status, weak
            return " "
        if re.fullmatch(r"[A-Za-z가-힣][\w가-힣/&+.-]{0,19}", inner) and "category" not in fields:
            fields["category"] = inner
            return " "
        return match.group(0)

    return re.sub(r"[\[(]([^\[\]()]*)[\])]", repl, text)


def _name(fields: dict[str, Any], text: str) -> None:
    text = text.replace("**", "").replace("`", "")
    parts = [p.strip(" \t:|,;.-—–") for p in re.split(r"\s[—–|]\s|\s-\s|\s[—–]|[—–]\s", text)]
    parts = [p for p in parts if p]
    if not parts:
        return
    fields["name"] = " ".join(parts[0].split())
    for extra in parts[1:]:
        extra = " ".join(extra.split())
        if re.fullmatch(r"[A-Za-z가-힣][\w가-힣/&+.-]{0,19}", extra) and "category" not in fields:
            fields["category"] = extra
        else:
            fields["note"] = f"{fields['note']}; {extra}" if fields.get("note") else extra


def phase_id(text: str) -> str | None:
    """``Phase 1`` / ``1단계`` / ``phase1`` / ``1`` → ``phase1``; None when not a phase name."""
    text = text.strip()
    match = _PHASE.match(text)
    if match:
        return f"{_PHASE_PREFIX.get(match.group(1).casefold(), 'phase')}{match.group(2).lower()}"
    match = _PHASE_KO.match(text) or re.fullmatch(r"(\d+)()", text)
    return f"phase{match.group(1)}" if match else None


def _phase_heading(text: str) -> tuple[str, str] | None:
    match = _PHASE.match(text)
    if match:
        pid = f"{_PHASE_PREFIX.get(match.group(1).casefold(), 'phase')}{match.group(2).lower()}"
        return pid, match.group(3).strip() or text
    match = _PHASE_KO.match(text)
    if match:
        return f"phase{match.group(1)}", match.group(2).strip() or text
    return None


def _domain_heading(text: str) -> tuple[str, str] | None:
    text = re.sub(r"^\d+[.)]\s*", "", text.replace("**", "").strip())
    for i, pattern in enumerate(_DOMAIN_PATTERNS):
        match = pattern.match(text)
        if match:
            if i == 1:
                return match.group(2), re.sub(r"\s*(?:도메인|domain)$", "", match.group(1), flags=re.I).strip()
            code = match.group(1)
            name = match.group(2).strip() if i == 0 else code
            return code, name
    return None


# ---- the line walker -----------------------------------------------------------------------------


class _Walker:
    """State shared by both parsers: heading contexts, the current item, tables."""

    def __init__(self, parsed: Parsed) -> None:
        self.p = parsed
        self.phase: tuple[int, str] | None = None  # (heading level, phase id)
        self.domain: tuple[int, str] | None = None
        self.feature: tuple[int, str] | None = None  # (heading level or -1 for a list item, id)
        self.feature_indent = -1
        self.item: tuple[str, str] | None = None  # ("feature"|"task"|"domain", id): where notes go
        self.header: list[str | None] | None = None
        self.pending_header: list[str] | None = None
        self.seen_title = False
        self.auto: dict[str, int] = {}

    # -- headings
    def heading(self, n: int, level: int, text: str) -> None:
        self.header = None
        for name in ("phase", "domain", "feature"):
            ctx = getattr(self, name)
            if ctx is not None and ctx[0] >= level:
                setattr(self, name, None)
        if self.feature is not None and self.feature[0] == -1:
            self.feature = None
        self.item = None
        text = re.sub(r"^\d+[.)]\s+", "", text.replace("**", "").strip())
        text = _LABEL_PREFIX.sub("", text)
        if _ITEM_ID.match(_LEAD.sub("", text)):
            self.item_line(n, text, heading_level=level)
            return
        phase = _phase_heading(text)
        if phase:
            self.phase = (level, phase[0])
            self.p.phases.setdefault(phase[0], {"name": phase[1], "features": []})
            return
        domain = _domain_heading(text)
        if domain:
            self.domain = (level, domain[0])
            self.item = ("domain", domain[0])
            self.p.domains.setdefault(domain[0], {"name": domain[1]})
            return
        if level == 1 and not self.seen_title:
            self.seen_title = True  # the document's title
            return
        self.p.warn(n, text, "heading is not a phase, domain or feature: the section below has no context")

    # -- items
    def item_line(self, n: int, text: str, indent: int = 0, heading_level: int | None = None) -> None:
        check = _CHECK.match(text)
        status: str | None = None
        weak = False
        if check:
            status, weak = status_of(f"[{check.group(1).lower()}]")
            text = check.group(2)
        lead = _LEAD_EMOJI.match(text)
        if lead:
            status, weak = status_of(lead.group(1))
            text = text[lead.end() :]
        text = _LABEL_PREFIX.sub("", text.strip())
        found = _ITEM_ID.match(text)
        if not found:
            self.idless(n, text, indent, status, weak)
            return
        item_id = found.group(1)
        fields, problems = attributes(text.strip()[found.end() :])
        for problem in problems:
            self.p.warn(n, text, problem)
        if status is not None and "status" not in fields:
            fields["status"], fields["weak"] = status, weak
        if self.is_task(item_id, indent, heading_level):
            self.add_task(n, item_id, fields)
        else:
            self.add_feature(n, item_id, fields, heading_level, indent)

    def is_task(self, item_id: str, indent: int, heading_level: int | None) -> bool:
        if self.feature is None:
            return False
        if item_id.startswith(self.feature[1] + "-"):
            return True
        if heading_level is not None or self.p.kind == "domain-definition":  # domain docs list features
            return False
        return self.feature[0] != -1 or indent > self.feature_indent

    def add_feature(self, n: int, fid: str, fields: dict[str, Any], heading_level: int | None, indent: int = 0) -> None:
        fields.pop("dependencies", None)
        phase = fields.pop("phase", None) or (self.phase[1] if self.phase else None)
        if self.domain and "domain" not in fields:
            fields["domain"] = self.domain[1]
        entry = self.p.features.setdefault(fid, {"line": n})
        entry.update({k: v for k, v in fields.items() if v is not None})
        if phase:
            self.p.phases.setdefault(phase, {"name": _phase_name(phase), "features": []})
            entry["phase"] = phase
        self.feature = (heading_level if heading_level is not None else -1, fid)
        self.feature_indent = indent
        self.item = ("feature", fid)

    def add_task(self, n: int, tid: str, fields: dict[str, Any]) -> None:
        assert self.feature is not None
        fields.pop("phase", None)
        fields.pop("domain", None)
        entry = self.p.tasks.setdefault(tid, {"line": n, "featureId": self.feature[1]})
        entry.update({k: v for k, v in fields.items() if v is not None})
        self.item = ("task", tid)

    def idless(self, n: int, text: str, indent: int, status: str | None, weak: bool) -> None:
        keyval = _KEYVAL.match(text.strip())
        if keyval and _KEYS.get(keyval.group(1).strip().casefold()) and status is None:
            self.attribute(n, text, _KEYS[keyval.group(1).strip().casefold()], keyval.group(2))
            return
        nested = self.feature is not None and (self.feature[0] != -1 or indent > self.feature_indent)
        if nested and self.p.kind == "feature-list":
            assert self.feature is not None
            fid = self.feature[1]
            self.auto[fid] = self.auto.get(fid, 0) + 1
            fields, problems = attributes(text)
            for problem in problems:
                self.p.warn(n, text, problem)
            if status is not None and "status" not in fields:
                fields["status"], fields["weak"] = status, weak
            if not fields.get("name"):
                self.p.warn(n, text, "task without a name")
                return
            self.add_task(n, f"{fid}-{self.auto[fid]:02d}", {**fields, "auto": True})
            return
        if self.domain is not None and self.p.kind == "domain-definition":
            self.p.domains[self.domain[1]].setdefault("scope", []).append(text.strip())
            return
        self.p.warn(n, text, "list item without an id outside a feature (ignored)")

    def attribute(self, n: int, text: str, key: str, value: str) -> None:
        value = value.strip()
        if key == "features" or (key == "feature_col" and re.search(_ID, value)):
            if self.domain is None:
                self.p.warn(n, text, "feature ids outside a domain (ignored)")
                return
            for fid in re.findall(_ID, value):
                entry = self.p.features.setdefault(fid, {"line": n, "referenced": True})
                entry["domain"] = self.domain[1]
            return
        if self.item is None:
            self.p.warn(n, text, f"'{key}' line outside a feature, task or domain (ignored)")
            return
        kind, item_id = self.item
        table = {"feature": self.p.features, "task": self.p.tasks, "domain": self.p.domains}[kind]
        problems: list[str] = []
        fields: dict[str, Any] = {}
        if key == "name":
            fields["name"] = value
        else:
            _set_keyed(fields, key, value, problems)
        for problem in problems:
            self.p.warn(n, text, problem)
        if kind == "domain" and key in ("note", "description"):
            old = table[item_id].get("description")
            fields = {"description": f"{old} {value}" if old else value}
        table[item_id].update({k: v for k, v in fields.items() if v is not None})

    # -- tables
    def table_row(self, n: int, line: str) -> None:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if self.header is None:
            self.pending_header = cells
            return
        row = {key: cell for key, cell in zip(self.header, cells, strict=False) if key}
        self.row(n, line, row)

    def separator(self, n: int, line: str) -> None:
        if self.pending_header is None:
            self.p.warn(n, line, "table separator without a header")
            return
        self.header = [_column(c) for c in self.pending_header]
        unknown = [c for c, k in zip(self.pending_header, self.header, strict=False) if k is None and c]
        if unknown:
            self.p.warn(n - 1, " | ".join(unknown), "table column(s) not understood (ignored)")
        self.pending_header = None

    def row(self, n: int, line: str, row: dict[str, str]) -> None:
        cell = {k: v.replace("**", "").strip("` ") for k, v in row.items()}
        ids = [cell.get(k, "") for k in ("id", "task_col", "feature_col") if _ID_RE.match(cell.get(k, ""))]
        names = [cell.get(k, "") for k in ("name", "task_col", "feature_col") if cell.get(k) and cell[k] not in ids]
        name = names[0] if names else ""
        if self.p.kind == "domain-definition":
            code = next((cell[k] for k in ("id", "domain") if re.fullmatch(_CODE, cell.get(k, ""))), "")
            label = name or next((cell[k] for k in ("domain",) if cell.get(k) and cell[k] != code), "")
            if not code and label and _domain_heading(label):
                code, label = _domain_heading(label)  # type: ignore[misc]
            if code:
                self.table_domain(code, label, row)
                return
        if ids:
            parent = cell.get("featureId", "") or (ids[1] if len(ids) > 1 else "")
            self.table_item(n, line, ids[0], name, row, parent=parent)
            return
        if self.feature is not None and name and self.p.kind == "feature-list" and self.feature[0] != -1:
            fid = self.feature[1]
            self.auto[fid] = self.auto.get(fid, 0) + 1
            self.table_item(n, line, f"{fid}-{self.auto[fid]:02d}", name, row, parent=fid, auto=True)
            return
        self.p.warn(n, line, "table row without a recognisable id (ignored)")

    def table_domain(self, code: str, name: str, row: dict[str, str]) -> None:
        entry = self.p.domains.setdefault(code, {"name": name or code})
        if name:
            entry["name"] = name
        if row.get("description"):
            entry["description"] = row["description"]
        for fid in re.findall(_ID, row.get("features", "")):
            self.p.features.setdefault(fid, {"line": 0, "referenced": True})["domain"] = code

    def table_item(
        self, n: int, line: str, ident: str, name: str, row: dict[str, str], parent: str = "", auto: bool = False
    ) -> None:
        problems: list[str] = []
        fields: dict[str, Any] = {"name": " ".join(name.split())} if name.strip() else {}
        for key in ("category", "priority", "points", "status", "depends", "phase", "note", "domain"):
            value = row.get(key, "").strip()
            if value and not (key == "points" and value in ("-", "—", "?")):
                _set_keyed(fields, key, value, problems)
        if "status" in row and not row["status"].strip():
            fields["status"], fields["weak"] = "pending", True
        if fields.get("status", "") is None:
            fields.pop("status")
        for problem in problems:
            self.p.warn(n, line, problem)
        if auto:
            fields["auto"] = True
        if parent and _ID_RE.match(parent):
            self.feature_for_task(parent)
        elif self.feature is not None and ident.startswith(self.feature[1] + "-"):
            parent = self.feature[1]
        if parent:
            saved = self.feature
            self.feature = (-1, parent)
            self.add_task(n, ident, fields)
            self.p.tasks[ident]["featureId"] = parent
            self.feature = saved
            return
        saved = self.feature
        self.add_feature(n, ident, fields, heading_level=None)
        self.feature = saved  # a table row opens no context for the lines after the table

    def feature_for_task(self, fid: str) -> None:
        self.p.features.setdefault(fid, {"line": 0, "referenced": True})


def _column(label: str) -> str | None:
    text = " ".join(label.replace("*", "").strip().casefold().split())
    return _KEYS.get(text)


def _phase_name(pid: str) -> str:
    match = re.match(r"([a-z]+)(\w+)$", pid)
    return f"{match.group(1).capitalize()} {match.group(2)}" if match else pid


def parse(text: str, kind: str, source: str = "<text>") -> Parsed:
    """Parse a feature list or domain definition; never raises on content, only warns."""
    if kind not in KINDS:
        raise DocError(f"unknown document kind {kind!r}: use one of {', '.join(KINDS)}")
    parsed = Parsed(kind, source)
    walker = _Walker(parsed)
    fence_start = 0
    in_comment = False
    lines = text.splitlines()
    skip = 0
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if n == skip:
            continue
        if fence_start:
            if _FENCE.match(line):
                parsed.warn(fence_start, f"lines {fence_start}-{n}", "code block ignored")
                fence_start = 0
            continue
        if in_comment:
            in_comment = "-->" not in line
            continue
        if not line.strip():
            walker.pending_header = None
            continue
        if _FENCE.match(line):
            fence_start = n
            continue
        if line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            continue
        underline = _SETEXT.match(lines[n]) if n < len(lines) else None
        if underline and not re.match(r"^\s*([-*+|>#]|\d+[.)])", line):
            line, skip = ("#" if underline.group(1)[0] == "=" else "##") + " " + line.strip(), n + 1
        _line(walker, n, line)
    if fence_start:
        parsed.warn(fence_start, "```", "code block never closed: the rest of the document was ignored")
    return parsed


def _line(walker: _Walker, n: int, line: str) -> None:
    stripped = line.strip()
    if not stripped.startswith("|"):
        walker.header = None
        if walker.pending_header is not None:
            walker.p.warn(n - 1, " | ".join(walker.pending_header), "table row without a header separator")
            walker.pending_header = None
    heading = _HEADING.match(stripped)
    if heading:
        walker.heading(n, len(heading.group(1)), heading.group(2))
    elif _TABLE_SEP.match(stripped) and "|" in stripped:
        walker.separator(n, stripped)
    elif stripped.startswith("|"):
        walker.table_row(n, stripped)
    elif _RULE.match(stripped):
        return
    elif stripped.startswith(">"):
        _quote(walker, n, stripped.lstrip("> ").strip())
    else:
        item = _LIST.match(line)
        if item:
            walker.item_line(n, item.group(2), len(item.group(1).expandtabs(4)))
        else:
            _prose(walker, n, stripped)


def _quote(walker: _Walker, n: int, text: str) -> None:
    if not text:
        return
    if walker.item is None or (walker.item[0] == "domain" and walker.p.kind != "domain-definition"):
        walker.p.warn(n, text, "quote outside a feature or task (ignored)")
        return
    kind, item_id = walker.item
    if kind == "domain":
        entry = walker.p.domains[item_id]
        entry["description"] = f"{entry['description']} {text}" if entry.get("description") else text
        return
    table = walker.p.features if kind == "feature" else walker.p.tasks
    note = table[item_id].get("note")
    table[item_id]["note"] = f"{note} {text}" if note else text


def _prose(walker: _Walker, n: int, text: str) -> None:
    keyval = _KEYVAL.match(text)
    if keyval and _KEYS.get(keyval.group(1).strip().casefold()):
        walker.attribute(n, text, _KEYS[keyval.group(1).strip().casefold()], keyval.group(2))
        return
    in_domain = walker.domain is not None and walker.item == ("domain", walker.domain[1])
    if in_domain and walker.p.kind == "domain-definition":
        assert walker.domain is not None
        entry = walker.p.domains[walker.domain[1]]
        entry["description"] = f"{entry['description']} {text}" if entry.get("description") else text
        return
    walker.p.warn(n, text, "text not understood (ignored)")


# ---- into progress.json --------------------------------------------------------------------------


def detect_kind(path: str, text: str) -> str:
    name = os.path.basename(path).casefold()
    if "domain" in name or "도메인" in name:
        return "domain-definition"
    if "feature" in name or "기능" in name or "task" in name:
        return "feature-list"
    headings = [m.group(2) for m in (_HEADING.match(line.strip()) for line in text.splitlines()) if m]
    domains = sum(1 for h in headings if _domain_heading(h) and not _ITEM_ID.match(h))
    ids = len(re.findall(_ID, text))
    return "domain-definition" if domains and domains >= ids else "feature-list"


DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".txt")


def check_document(path: str) -> None:
    """A feature list or domain definition is a markdown document: anything else (``app.py``) is refused
    by name, rather than parsed line by line into nonsense features."""
    if not path.casefold().endswith(DOC_SUFFIXES):
        raise DocError(
            f"{path} is not a markdown document: import-doc reads feature lists and domain definitions "
            f"({', '.join(DOC_SUFFIXES)}), e.g. docs/feature-list.md"
        )


def read(path: str, kind: str | None = None) -> Parsed:
    check_document(path)
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise DocError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise DocError(f"{path}: cannot read ({exc.strerror})") from exc
    return parse(text, kind or detect_kind(path, text), path)


class Applied:
    def __init__(self) -> None:
        self.added: list[str] = []
        self.updated: list[str] = []
        self.warnings: list[tuple[int, str, str]] = []

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.updated)} updated, {len(self.warnings)} warning(s)"


_FEATURE_FIELDS = ("name", "category", "points", "domain", "note")
_TASK_FIELDS = ("name", "priority", "points", "note")


def _status(existing: dict[str, Any] | None, fields: dict[str, Any]) -> str | None:
    """The document's status unless it is a weak "not done" for an item that already moved on."""
    status = fields.get("status")
    if status is None or (fields.get("weak") and existing is not None):
        return None
    return str(status)


def apply(data: dict[str, Any], parsed: Parsed) -> Applied:
    """Merge what a document says into progress data. Items absent from the document are kept."""
    out = Applied()
    out.warnings = list(parsed.warnings)
    for did, dom in parsed.domains.items():
        (out.updated if did in data["domains"] else out.added).append(f"domain {did}")
        entry = data["domains"].setdefault(did, {"name": dom["name"], "status": "pending"})
        entry["name"] = dom.get("name") or entry.get("name") or did
        for key in ("description", "scope"):
            if dom.get(key):
                entry[key] = dom[key]
    for pid, phase in parsed.phases.items():
        entry = data["phases"].setdefault(
            pid, {"name": phase["name"], "status": "pending", "totalPoints": 0, "completedPoints": 0, "features": []}
        )
        entry["name"] = phase["name"]
    for fid, fields in parsed.features.items():
        _apply_feature(data, fid, fields, out)
    _apply_tasks(data, parsed, out)
    return out


def _apply_feature(data: dict[str, Any], fid: str, fields: dict[str, Any], out: Applied) -> None:
    existing = data["features"].get(fid)
    values = {k: fields[k] for k in _FEATURE_FIELDS if fields.get(k) is not None}
    if existing is None and not values.get("name"):
        values["name"] = fid
        if not fields.get("referenced"):
            out.warnings.append((fields.get("line", 0), fid, "feature has no name: its id is used"))
    prog.add_feature(data, fid, values.pop("name", None), status=_status(existing, fields), **values)
    if fields.get("phase"):
        prog.add_to_phase(data, fields["phase"], fid)
    (out.updated if existing is not None else out.added).append(f"feature {fid}")


def _apply_tasks(data: dict[str, Any], parsed: Parsed, out: Applied) -> None:
    renamed = _reuse_auto_ids(data, parsed)
    known_before = set(data["tasks"])
    for tid, fields in parsed.tasks.items():
        tid = renamed.get(tid, tid)
        values = {k: fields[k] for k in _TASK_FIELDS if fields.get(k) is not None}
        fid = fields.get("featureId")
        if fid not in data["features"]:
            out.warnings.append((fields.get("line", 0), tid, f"task's feature {fid!r} is unknown: task skipped"))
            continue
        if tid not in data["tasks"] and not values.get("name"):
            out.warnings.append((fields.get("line", 0), tid, "task has no name: skipped"))
            continue
        prog.add_task(data, tid, values.pop("name", None), featureId=fid, **values)
        (out.updated if tid in known_before else out.added).append(f"task {tid}")
    for tid, fields in parsed.tasks.items():  # dependencies and status once every task exists
        tid = renamed.get(tid, tid)
        if tid not in data["tasks"]:
            continue
        deps = [renamed.get(d, d) for d in fields.get("dependencies", [])]
        for dep in deps:
            if dep not in data["tasks"]:
                out.warnings.append((fields.get("line", 0), tid, f"unknown dependency {dep!r} (dropped)"))
        if "dependencies" in fields:
            data["tasks"][tid]["dependencies"] = [d for d in deps if d in data["tasks"] and d != tid]
        status = _status(data["tasks"][tid] if tid in known_before else None, fields)
        if status is not None:
            prog.set_task_status(data, tid, status, force=True)  # the document is the record: no dependency check


def _reuse_auto_ids(data: dict[str, Any], parsed: Parsed) -> dict[str, str]:
    """Tasks without ids get ``<feature>-NN``; a task already known by name keeps its id instead."""
    renamed: dict[str, str] = {}
    by_name = {(t.get("featureId"), t.get("name")): tid for tid, t in data["tasks"].items()}
    for tid, fields in parsed.tasks.items():
        if not fields.get("auto"):
            continue
        known = by_name.get((fields.get("featureId"), fields.get("name")))
        if known and known != tid:
            renamed[tid] = known
        elif tid in data["tasks"] and data["tasks"][tid].get("name") != fields.get("name"):
            n = 1
            while f"{fields['featureId']}-{n:02d}" in data["tasks"] or f"{fields['featureId']}-{n:02d}" in parsed.tasks:
                n += 1
            renamed[tid] = f"{fields['featureId']}-{n:02d}"
    return renamed
