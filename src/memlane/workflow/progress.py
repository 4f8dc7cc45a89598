"""``progress.json``: the structured progress of a workflow memory. Stdlib only (hook path).

The model is the seed's (``setup.workflows``/``custom``, ``phases``, ``domains``, ``features``,
``tasks``) plus optional ``points`` on features and tasks and ``domain`` on features (version 1.1).
Every read validates and migrates; a file with an error raises ``ProgressError`` naming the field
and is never overwritten. ``mutate`` is the one way to change it: lock, read, change, recalculate,
validate, write atomically, regenerate memory.md.

Why one module (~510 lines): it is the rules of one file format. Validation and migration run on every
read and write, ``recalculate`` and ``mutate`` depend on both, and the changes at the end are the only
writers; split, each part would import all the others.
"""

from __future__ import annotations

import json
import re

from memlane.workflow import store
from memlane.workflow.store import WorkflowError, now_iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

VERSION = "1.1"
KNOWN_VERSIONS = ("1.0", "1.1")
STATUSES = ("pending", "in_progress", "done", "blocked")
PRIORITIES = ("critical", "high", "medium", "low")
SECTIONS = ("phases", "domains", "features", "tasks")
LABEL = "progress.json"
_DOMAIN_OF = re.compile(r"^(.+?)-\d+[A-Za-z]?$")


class ProgressError(WorkflowError):
    """progress.json is invalid, or a change to it is not allowed; names the field."""


class DependencyError(ProgressError):
    """A task cannot be done before its dependencies."""


def skeleton() -> dict[str, Any]:
    return {
        "version": VERSION,
        "lastUpdated": None,
        "setup": {"workflows": {}, "custom": []},
        "phases": {},
        "domains": {},
        "features": {},
        "tasks": {},
    }


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def new(default_json: str = "{}") -> dict[str, Any]:
    """A fresh progress document with ``workflow.default_progress`` merged in, validated."""
    try:
        extra = json.loads(default_json or "{}")
    except ValueError as exc:
        raise ProgressError(f"workflow.default_progress: invalid JSON: {exc}") from exc
    if not isinstance(extra, dict):
        raise ProgressError("workflow.default_progress: must be a JSON object")
    data = _merge(skeleton(), extra)
    data["version"] = VERSION
    return validate(migrate(data))


# ---- migrations ----------------------------------------------------------------------------------


def _migrate_0(data: dict[str, Any]) -> None:
    """Files without a version (hand-made or from early tools): fill sections, normalise shapes."""
    setup = data.setdefault("setup", {})
    if isinstance(setup, dict):
        setup.setdefault("workflows", {})
        setup.setdefault("custom", [])
        workflows = setup.get("workflows")
        if isinstance(workflows, dict):
            for name, value in list(workflows.items()):
                if isinstance(value, str):  # "legacy-profile": "done"
                    workflows[name] = {"status": value}
    for section in SECTIONS:
        data.setdefault(section, {})
    tasks = data.get("tasks")
    if isinstance(tasks, dict):
        for task in tasks.values():
            deps = task.get("dependencies") if isinstance(task, dict) else None
            if isinstance(deps, str):  # "A, B"
                task["dependencies"] = [d.strip() for d in deps.split(",") if d.strip()]
    data["version"] = "1.0"


def _migrate_1_0(data: dict[str, Any]) -> None:
    """1.0 → 1.1: points on features and tasks, a domain on features."""
    for section in ("features", "tasks"):
        items = data.get(section)
        if isinstance(items, dict):
            for item_id, item in items.items():
                if isinstance(item, dict):
                    item.setdefault("points", None)
                    if section == "features":
                        item.setdefault("domain", domain_of(item_id))
    data["version"] = "1.1"


def migrate(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    version = data.get("version")
    if version is None or version in ("0", "0.1"):
        _migrate_0(data)
        version = "1.0"
    if version == "1.0":
        _migrate_1_0(data)
    elif isinstance(version, str) and version not in KNOWN_VERSIONS:
        raise ProgressError(f"{LABEL}: version: '{version}' is not supported (this memlane reads up to {VERSION})")
    return data


def domain_of(feature_id: str) -> str | None:
    """``AUTH-001`` → ``AUTH``: the domain a feature id names by convention."""
    match = _DOMAIN_OF.match(feature_id)
    return match.group(1) if match else None


# ---- validation ----------------------------------------------------------------------------------


def _fail(where: str, message: str) -> ProgressError:
    return ProgressError(f"{LABEL}: {where}: {message}")


def _type(where: str, value: Any, kinds: tuple[type, ...], what: str) -> None:
    if isinstance(value, bool) and bool not in kinds:
        raise _fail(where, f"must be {what}, got {json.dumps(value)}")
    if not isinstance(value, kinds):
        raise _fail(where, f"must be {what}, got {json.dumps(value, ensure_ascii=False)[:60]}")


def _choice(where: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise _fail(where, f"{value!r} is not one of {', '.join(choices)}")


def _opt_str(where: str, item: dict[str, Any], key: str) -> None:
    if item.get(key) is not None:
        _type(f"{where}.{key}", item[key], (str,), "a string or null")


def _number(where: str, value: Any, optional: bool = False) -> None:
    if value is None and optional:
        return
    _type(where, value, (int, float), "a number" + (" or null" if optional else ""))
    if value < 0:
        raise _fail(where, f"must not be negative, got {value}")


def _item(where: str, item: Any, statuses: tuple[str, ...] = STATUSES, named: bool = True) -> dict[str, Any]:
    _type(where, item, (dict,), "an object")
    if named:
        if "name" not in item:
            raise _fail(f"{where}.name", "is missing")
        _type(f"{where}.name", item["name"], (str,), "a string")
    if "status" not in item:
        raise _fail(f"{where}.status", "is missing")
    _choice(f"{where}.status", item["status"], statuses)
    for key in ("createdAt", "updatedAt", "startedAt", "completedAt", "note"):
        _opt_str(where, item, key)
    return item


def validate(data: Any) -> dict[str, Any]:
    """``data`` if it is a valid progress document; else ProgressError naming the first bad field."""
    _type("(top level)", data, (dict,), "a JSON object")
    _type("version", data.get("version"), (str,), "a string")
    _opt_str("(top level)", data, "lastUpdated")
    setup = data.get("setup")
    _type("setup", setup, (dict,), "an object")
    _type("setup.workflows", setup.get("workflows"), (dict,), "an object")
    for name, wf in setup["workflows"].items():
        _item(f"setup.workflows.{name}", wf, named=False)
    _type("setup.custom", setup.get("custom"), (list,), "a list")
    for section in SECTIONS:
        _type(section, data.get(section), (dict,), "an object")
    features, tasks = data["features"], data["tasks"]
    for fid, feature in features.items():
        where = f"features.{fid}"
        _item(where, feature)
        _opt_str(where, feature, "category")
        _opt_str(where, feature, "domain")
        _number(f"{where}.points", feature.get("points"), optional=True)
    for tid, task in tasks.items():
        _validate_task(f"tasks.{tid}", task, features, tasks)
    for pid, phase in data["phases"].items():
        where = f"phases.{pid}"
        _item(where, phase)
        for key in ("totalPoints", "completedPoints"):
            _number(f"{where}.{key}", phase.get(key, 0))
        _type(f"{where}.features", phase.get("features", []), (list,), "a list of feature ids")
        for fid in phase.get("features", []):
            if fid not in features:
                raise _fail(f"{where}.features", f"unknown feature {fid!r}")
    for did, domain in data["domains"].items():
        where = f"domains.{did}"
        _item(where, domain)
        for key in ("totalFeatures", "completedFeatures"):
            _number(f"{where}.{key}", domain.get(key, 0))
    return data


def _validate_task(where: str, task: Any, features: dict[str, Any], tasks: dict[str, Any]) -> None:
    _item(where, task)
    fid = task.get("featureId")
    if fid is not None:
        _type(f"{where}.featureId", fid, (str,), "a feature id or null")
        if fid not in features:
            raise _fail(f"{where}.featureId", f"unknown feature {fid!r}")
    if task.get("priority") is not None:
        _choice(f"{where}.priority", task["priority"], PRIORITIES)
    deps = task.get("dependencies", [])
    _type(f"{where}.dependencies", deps, (list,), "a list of task ids")
    for dep in deps:
        if dep not in tasks:
            raise _fail(f"{where}.dependencies", f"unknown task {dep!r}")
    _number(f"{where}.points", task.get("points"), optional=True)


# ---- reading and writing -------------------------------------------------------------------------


def path(memory_id: str) -> str:
    return store.file(memory_id, "progress.json")


def load(memory_id: str) -> dict[str, Any]:
    data = store.read_json(path(memory_id), LABEL)
    if data is None:
        raise ProgressError(f"{LABEL}: missing in workflow memory '{memory_id}'")
    return validate(migrate(data))


def save(memory_id: str, data: dict[str, Any]) -> None:
    data["lastUpdated"] = now_iso()
    store.write_json(path(memory_id), validate(data))


def mutate(memory_id: str, change: Callable[[dict[str, Any]], Any], render: bool = True) -> Any:
    """Apply ``change`` to progress.json inside the memory's lock; returns what ``change`` returned.

    Nothing is written when ``change`` or validation raises, so a bad edit never reaches the file.
    """
    with store.Lock(memory_id):
        data = load(memory_id)
        result = change(data)
        recalculate(data)
        save(memory_id, data)
        if render:
            from memlane.workflow.memory_md import write

            write(memory_id, data)
        return result


# ---- changes -------------------------------------------------------------------------------------


def _set_status(item: dict[str, Any], status: str, where: str) -> None:
    _choice(f"{where}.status", status, STATUSES)
    stamp = now_iso()
    if item.get("status") != status:
        item["status"] = status
        item["updatedAt"] = stamp
    if status == "done":
        item["completedAt"] = item.get("completedAt") or stamp
    else:
        item["completedAt"] = None


def _edit(item: dict[str, Any], fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        if value is not None:
            item[key] = value


def add_feature(data: dict[str, Any], fid: str, name: str | None = None, **fields: Any) -> dict[str, Any]:
    """Add or update a feature. ``phase`` also lists it in that phase (created when new)."""
    phase = fields.pop("phase", None)
    status = fields.pop("status", None)
    feature = data["features"].get(fid)
    if feature is None:
        if not name:
            raise ProgressError(f"feature {fid}: a name is needed to add it")
        stamp = now_iso()
        feature = {
            "name": name,
            "category": None,
            "status": "pending",
            "createdAt": stamp,
            "updatedAt": stamp,
            "completedAt": None,
            "note": "",
            "points": None,
            "domain": domain_of(fid),
        }
        data["features"][fid] = feature
    _edit(feature, {"name": name, **fields})
    feature["updatedAt"] = now_iso()
    if status is not None:
        _set_status(feature, status, f"features.{fid}")
    if phase:
        add_to_phase(data, phase, fid)
    return feature


def add_to_phase(data: dict[str, Any], phase_id: str, fid: str, name: str | None = None) -> dict[str, Any]:
    phase = data["phases"].setdefault(
        phase_id,
        {"name": name or phase_id, "status": "pending", "totalPoints": 0, "completedPoints": 0, "features": []},
    )
    if name:
        phase["name"] = name
    for other_id, other in data["phases"].items():
        if other_id != phase_id and fid in other.get("features", []):
            other["features"].remove(fid)  # a feature belongs to one phase
    if fid not in phase.setdefault("features", []):
        phase["features"].append(fid)
    return phase


def add_task(data: dict[str, Any], tid: str, name: str | None = None, **fields: Any) -> dict[str, Any]:
    """Add or update a task. Unknown feature or dependency ids are refused with the field named."""
    status = fields.pop("status", None)
    force = bool(fields.pop("force", False))
    fid = fields.get("featureId")
    if fid is not None and fid not in data["features"]:
        raise ProgressError(f"tasks.{tid}.featureId: unknown feature {fid!r}")
    for dep in fields.get("dependencies") or []:
        if dep not in data["tasks"] or dep == tid:
            raise ProgressError(f"tasks.{tid}.dependencies: unknown task {dep!r}")
    task = data["tasks"].get(tid)
    if task is None:
        if not name:
            raise ProgressError(f"task {tid}: a name is needed to add it")
        stamp = now_iso()
        task = {
            "name": name,
            "featureId": None,
            "priority": "medium",
            "dependencies": [],
            "status": "pending",
            "createdAt": stamp,
            "updatedAt": stamp,
            "completedAt": None,
            "note": "",
            "points": None,
        }
        data["tasks"][tid] = task
    if fields.get("priority") is not None:
        _choice(f"tasks.{tid}.priority", fields["priority"], PRIORITIES)
    _edit(task, {"name": name, **fields})
    task["updatedAt"] = now_iso()
    if status is not None:
        set_task_status(data, tid, status, force=force)
    return task


def set_feature_status(data: dict[str, Any], fid: str, status: str, note: str | None = None) -> dict[str, Any]:
    feature = data["features"].get(fid)
    if feature is None:
        raise ProgressError(f"unknown feature '{fid}'")
    _set_status(feature, status, f"features.{fid}")
    if note is not None:
        feature["note"] = note
    return feature


def open_dependencies(data: dict[str, Any], tid: str) -> list[str]:
    tasks = data["tasks"]
    return [d for d in tasks[tid].get("dependencies", []) if tasks.get(d, {}).get("status") != "done"]


def set_task_status(
    data: dict[str, Any], tid: str, status: str, note: str | None = None, force: bool = False
) -> dict[str, Any]:
    task = data["tasks"].get(tid)
    if task is None:
        raise ProgressError(f"unknown task '{tid}'")
    if status == "done" and not force:
        blocking = open_dependencies(data, tid)
        if blocking:
            states = ", ".join(f"{d} ({data['tasks'][d]['status']})" for d in blocking)
            raise DependencyError(f"task {tid} depends on {states}, not done yet; use --force to mark it done anyway")
    _set_status(task, status, f"tasks.{tid}")
    feature = data["features"].get(task.get("featureId") or "")
    if status != "done" and feature is not None and feature["status"] == "done":
        _set_status(feature, "in_progress", "features")  # a reopened task reopens its feature
    if note is not None:
        task["note"] = note
    return task


def set_workflow(data: dict[str, Any], name: str, status: str) -> dict[str, Any]:
    """Mark a setup workflow started or done (the hooks and ``complete`` call this)."""
    _choice(f"setup.workflows.{name}.status", status, STATUSES)
    wf = data["setup"]["workflows"].setdefault(name, {"status": "pending"})
    stamp = now_iso()
    if status == "in_progress":
        if wf.get("status") != "in_progress":
            wf["startedAt"] = stamp
        wf.pop("completedAt", None)
    elif status == "done":
        wf.setdefault("startedAt", stamp)
        wf["completedAt"] = stamp
    wf["status"] = status
    return wf


# ---- recalculation -------------------------------------------------------------------------------


def _rollup(statuses: list[str], current: str) -> str:
    """The status of a group from its members': all done → done, any started → in_progress."""
    if statuses and all(s == "done" for s in statuses):
        return "done"
    if current == "blocked":
        return current
    if any(s in ("done", "in_progress") for s in statuses):
        return "in_progress"
    return "pending"


def _tasks_by_feature(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for task in data["tasks"].values():
        if task.get("featureId"):
            out.setdefault(task["featureId"], []).append(task)
    return out


def feature_points(feature: dict[str, Any], tasks: list[dict[str, Any]]) -> tuple[float, float]:
    """(total, completed) points: the tasks' points when they have any, else the feature's own."""
    pointed = [t for t in tasks if t.get("points") is not None]
    if pointed:
        total = sum(t["points"] for t in pointed)
        done = total if feature["status"] == "done" else sum(t["points"] for t in pointed if t["status"] == "done")
        return total, done
    own = feature.get("points") or 0
    return own, own if feature["status"] == "done" else 0


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 2)


_RANK = {"pending": 0, "blocked": 0, "in_progress": 1, "done": 2}


def _roll_feature(feature: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
    """Promote a feature from its tasks; never demote (a reopened task does that, see set_task_status)."""
    if not tasks:
        return
    status = _rollup([t["status"] for t in tasks], feature["status"])
    if _RANK[status] > _RANK[feature["status"]]:
        _set_status(feature, status, "features")


def recalculate(data: dict[str, Any]) -> dict[str, Any]:
    """Feature status from tasks, domain feature counts, phase points; idempotent."""
    by_feature = _tasks_by_feature(data)
    features = data["features"]
    for fid, feature in features.items():
        _roll_feature(feature, by_feature.get(fid, []))
    members: dict[str, list[str]] = {}
    for fid, feature in features.items():
        domain = feature.get("domain") if "domain" in feature else domain_of(fid)
        if domain:
            members.setdefault(domain, []).append(fid)
    for did in members:
        data["domains"].setdefault(did, {"name": did, "status": "pending"})
    for did, domain in data["domains"].items():
        statuses = [features[f]["status"] for f in members.get(did, [])]
        domain["totalFeatures"] = len(statuses)
        domain["completedFeatures"] = sum(s == "done" for s in statuses)
        domain["status"] = _rollup(statuses, domain.get("status", "pending"))
    for phase in data["phases"].values():
        fids = [f for f in phase.get("features", []) if f in features]
        totals = [feature_points(features[f], by_feature.get(f, [])) for f in fids]
        phase["totalPoints"] = _num(sum(t for t, _ in totals))
        phase["completedPoints"] = _num(sum(d for _, d in totals))
        phase["status"] = _rollup([features[f]["status"] for f in fids], phase.get("status", "pending"))
    return data


def counts(data: dict[str, Any]) -> dict[str, Any]:
    """Headline numbers for status lines and memory.md."""
    features = list(data["features"].values())
    tasks = list(data["tasks"].values())
    by_feature = _tasks_by_feature(data)
    points = [feature_points(f, by_feature.get(fid, [])) for fid, f in data["features"].items()]
    return {
        "features": len(features),
        "featuresDone": sum(f["status"] == "done" for f in features),
        "tasks": len(tasks),
        "tasksDone": sum(t["status"] == "done" for t in tasks),
        "points": _num(sum(t for t, _ in points)),
        "pointsDone": _num(sum(d for _, d in points)),
    }
