"""``memlane workflow …``: workflow memories, progress.json, memory.md, session records, cleanup.

Why one module (~510 lines): it is one click group (``memlane workflow``) whose subcommands register
on the group object defined here; each is a thin wrapper (options, one library call, render). Split, the
group would be spread over several files that each import it back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memlane import config
from memlane.cli import render
from memlane.cli.invocation import Ctx
from memlane.project import Project, resolve
from memlane.workflow import lifecycle, links, progress, sessions, store
from memlane.workflow.store import WorkflowError

# memlane.cli.main imports this module while it is being imported itself: take nothing from it here
# (Ctx comes from cli/invocation.py for that reason).
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
STATUS = click.Choice(progress.STATUSES)
PRIORITY = click.Choice(progress.PRIORITIES)
LINK_MODE = click.option(
    "--link-mode",
    type=click.Choice(["auto", *links.MODES]),
    default="auto",
    show_default=True,
    help="How .claude/docs/memory/memory.md reaches the central copy (auto: symlink, else hard link, else copy).",
)


class State:
    def __init__(self, obj: Ctx, memory: str | None) -> None:
        self.obj = obj
        self.memory_option = memory
        self._project: Project | None = None

    @property
    def project(self) -> Project:
        if self._project is None:
            # The root group's project resolution (-C, --project-id); no event store is opened or made.
            self._project = resolve(self.obj.cwd, self.obj.project_id)
        return self._project

    @property
    def root(self) -> str:
        return self.project.root_str

    def memory_id(self) -> str:
        """The memory to act on: --memory, else the project's linked one, else the project's own."""
        if self.memory_option:
            if not store.exists(store.check_id(self.memory_option)):
                raise WorkflowError(f"no workflow memory '{self.memory_option}' (see `memlane workflow list`)")
            return self.memory_option
        found = store.resolve(self.root, self.project.id)
        if found is None:
            raise WorkflowError(
                f"project {self.project.name} has no workflow memory: run `memlane workflow init` "
                "(or start a /workflow-<name> prompt in Claude Code)"
            )
        return found


pass_state = click.make_pass_decorator(State)


def _cfg() -> config.WorkflowConfig:
    return config.load().workflow


@click.group("workflow")
@click.option("--memory", "-m", "memory", metavar="ID", help="Act on this workflow memory instead of the project's.")
@click.pass_context
def workflow(ctx: click.Context, memory: str | None) -> None:
    """Workflow memory: progress.json, memory.md, /workflow-<name> session records (see docs/workflow.md)."""
    ctx.obj = State(ctx.find_object(Ctx) or Ctx(None, None), memory)


# ---- memories ------------------------------------------------------------------------------------


@workflow.command("init")
@click.argument("memory_id", metavar="[ID]", required=False)
@LINK_MODE
@pass_state
def init(state: State, memory_id: str | None, link_mode: str) -> None:
    """Create a workflow memory (default id: the project's id) and link the project to it."""
    memory_id = store.check_id(memory_id or state.project.id)
    created, mode = lifecycle.init(state.root, state.project.name, memory_id, _cfg(), link_mode)
    verb = "Created" if created else "Linked existing"
    click.echo(f"{verb} workflow memory {memory_id} ({store.mem_dir(memory_id)})")
    click.echo(f"  {links.local_path(state.root)} → central memory.md ({mode})")


@workflow.command("list")
@json_option
@pass_state
def list_(state: State, as_json: bool) -> None:
    """Every workflow memory, with its project, sessions and progress."""
    linked = store.read_ref(state.root) if not state.memory_option else state.memory_option
    rows: list[dict[str, Any]] = []
    for memory_id in store.all_ids():
        try:
            meta = store.load_meta(memory_id)
        except WorkflowError as exc:
            meta = {"projectName": f"meta.json invalid: {exc}"}
        try:
            c = progress.counts(progress.load(memory_id))
            done = f"{c['featuresDone']}/{c['features']} features, {c['tasksDone']}/{c['tasks']} tasks"
        except WorkflowError as exc:
            done = f"progress.json invalid: {exc}"
        rows.append(
            {
                "id": memory_id,
                "linked": memory_id == linked,
                "project": meta.get("projectName"),
                "path": meta.get("projectPath"),
                "sessions": len(sessions.list_files(memory_id)),
                "current": meta.get("currentWorkflow"),
                "progress": done,
                "lastAccess": meta.get("lastAccess"),
            }
        )
    if as_json:
        render.emit_json(rows)
    elif not rows:
        click.echo("No workflow memories yet: `memlane workflow init`.")
    else:
        for row in rows:
            row["id"] = ("* " if row["linked"] else "  ") + str(row["id"])
        render.dict_table(rows, ["id", "project", "sessions", "current", "progress", "lastAccess"])


@workflow.command("switch")
@click.argument("memory_id", metavar="ID")
@LINK_MODE
@pass_state
def switch(state: State, memory_id: str, link_mode: str) -> None:
    """Link the project to another (existing) workflow memory."""
    if not store.exists(store.check_id(memory_id)):
        raise WorkflowError(f"no workflow memory '{memory_id}' (see `memlane workflow list`)")
    old = store.read_ref(state.root)
    mode = lifecycle.link(state.root, memory_id, link_mode)
    click.echo(f"Project now uses workflow memory {memory_id} ({mode}); was {old or 'none'}.")


@workflow.command("status")
@json_option
@pass_state
def status(state: State, as_json: bool) -> None:
    """The memory in use: link, current workflow, active sessions, progress."""
    memory_id = state.memory_id()
    meta = store.load_meta(memory_id)
    data = progress.load(memory_id)
    c = progress.counts(data)
    info = {
        "id": memory_id,
        "dir": store.mem_dir(memory_id),
        "link": links.state(state.root, memory_id) if store.read_ref(state.root) == memory_id else "not linked",
        "currentWorkflow": meta.get("currentWorkflow"),
        "activeSessions": meta["activeSessions"],
        "pendingResume": meta.get("pendingResume"),
        "totalSessions": meta.get("totalSessions", 0),
        "sessionFiles": len(sessions.list_files(memory_id)),
        "workflows": data["setup"]["workflows"],
        "counts": c,
        "version": data["version"],
        "lastUpdated": data.get("lastUpdated"),
    }
    if as_json:
        render.emit_json(info)
        return
    flows = ", ".join(f"{n} ({w.get('status')})" for n, w in data["setup"]["workflows"].items()) or "none yet"
    render.kv_table(
        [
            ("memory", f"{memory_id}  ({info['dir']})"),
            ("project link", info["link"]),
            ("current workflow", info["currentWorkflow"] or "-"),
            (
                "active sessions",
                ", ".join(f"{v['workflow']} → {v['file']}" for v in meta["activeSessions"].values()) or "-",
            ),
            ("pending resume", "yes" if info["pendingResume"] else "no"),
            ("workflows", flows),
            ("features", f"{c['featuresDone']}/{c['features']} done"),
            ("tasks", f"{c['tasksDone']}/{c['tasks']} done"),
            ("points", f"{c['pointsDone']}/{c['points']}"),
            ("sessions", f"{info['totalSessions']} completed, {info['sessionFiles']} record(s) on disk"),
        ]
    )


@workflow.command("remove")
@click.argument("memory_id", metavar="ID")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def remove(memory_id: str, yes: bool) -> None:
    """Delete a workflow memory (progress, memory.md, session records) and its project links."""
    if not store.exists(store.check_id(memory_id)):
        raise WorkflowError(f"no workflow memory '{memory_id}' (see `memlane workflow list`)")
    count = len(sessions.list_files(memory_id))
    if not yes and not click.confirm(
        f"Delete workflow memory {memory_id} with {count} session record(s)? This cannot be undone", default=False
    ):
        raise click.Abort()
    unlinked = lifecycle.remove(memory_id)
    click.echo(f"Removed workflow memory {memory_id}.")
    for root in unlinked:
        click.echo(f"  unlinked {root}")


@workflow.command("update")
@pass_state
def update(state: State) -> None:
    """Regenerate memory.md from progress.json (the decisions section is kept)."""
    from memlane.workflow import memory_md

    memory_id = state.memory_id()
    memory_md.write(memory_id)
    click.echo(f"memory.md regenerated ({memory_md.path(memory_id)}).")


@workflow.command("decide")
@click.argument("text", nargs=-1, required=True)
@pass_state
def decide(state: State, text: tuple[str, ...]) -> None:
    """Record a key decision (dated) in memory.md's decisions section."""
    from memlane.workflow import memory_md

    line = memory_md.add_decision(state.memory_id(), " ".join(text))
    click.echo(f"Recorded: {line[2:]}")


@workflow.command("install-agent")
@click.option("--force", is_flag=True, help="Overwrite an existing memory-manager.md.")
@pass_state
def install_agent(state: State, force: bool) -> None:
    """Write .claude/agents/memory-manager.md: tells Claude when to record decisions."""
    from memlane.workflow import agent

    path = agent.install(state.root, force)
    click.echo(f"Wrote {path}")


# ---- sessions ------------------------------------------------------------------------------------


@workflow.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--all", "all_memories", is_flag=True, help="Search every workflow memory.")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 1000), help="At most this many.")
@json_option
@pass_state
def search(state: State, query: tuple[str, ...], all_memories: bool, limit: int, as_json: bool) -> None:
    """Search workflow session records (every word must appear; case-insensitive)."""
    text = " ".join(query)
    ids = store.all_ids() if all_memories else [state.memory_id()]
    hits = sessions.search(ids, text, limit)
    if as_json:
        render.emit_json(hits)
    elif not hits:
        click.echo(f"Nothing found for '{text}'.")
    else:
        cols = (
            ["memory", "file", "entry", "score", "snippet"] if all_memories else ["file", "entry", "score", "snippet"]
        )
        render.dict_table(hits, cols, title=f"'{text}'")


@workflow.command("cleanup")
@click.option("--dry-run", is_flag=True, help="Say what would be removed, remove nothing.")
@click.option("--all", "all_memories", is_flag=True, help="Clean every workflow memory.")
@pass_state
def cleanup_cmd(state: State, dry_run: bool, all_memories: bool) -> None:
    """Remove session records beyond workflow.max_sessions_per_project / max_session_age_days."""
    from memlane.workflow import cleanup

    cfg = _cfg()
    ids = store.all_ids() if all_memories else [state.memory_id()]
    total = 0
    for memory_id in ids:
        for info in cleanup.run(memory_id, cfg, dry_run=dry_run):
            total += 1
            verb = "would remove" if dry_run else "removed"
            click.echo(f"{memory_id}: {verb} {info['name']} — {info['reason']}")
    limits = f"keep {cfg.max_sessions_per_project} newest, at most {cfg.max_session_age_days} days old"
    click.echo(f"{'Would remove' if dry_run else 'Removed'} {total} session record(s) ({limits}).")


@workflow.command("complete")
@click.argument("name", metavar="[WORKFLOW]", required=False)
@pass_state
def complete(state: State, name: str | None) -> None:
    """Complete a workflow (default: the current one): close sessions, import docs, recalculate."""
    report = lifecycle.complete(state.memory_id(), name, state.root, _cfg(), reason="manual")
    click.echo(f"Workflow {report['workflow']} completed.")
    for file_name in report["sessions_closed"]:
        click.echo(f"  closed session record {file_name}")
    for path, applied in report.get("docs", []):
        click.echo(f"  imported {path}: {applied.summary()}")
        _print_warnings(applied.warnings)


# ---- progress ------------------------------------------------------------------------------------


def _print_warnings(warnings: list[tuple[int, str, str]]) -> None:
    for line_no, text, reason in warnings:
        where = f"line {line_no}" if line_no else "-"
        click.echo(f"  {where}: {reason}: {text}", err=True)


@workflow.command("import-doc")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--kind", type=click.Choice(["feature-list", "domain-definition"]), help="Default: from name/content.")
@click.option("--dry-run", is_flag=True, help="Parse and report, change nothing.")
@pass_state
def import_doc(state: State, paths: tuple[str, ...], kind: str | None, dry_run: bool) -> None:
    """Parse feature-list.md / domain-definition.md into progress.json (default: the project's own)."""
    from memlane.workflow import docs

    for p in paths:  # before anything is read or changed
        docs.check_document(p)
    memory_id = state.memory_id()
    if paths:
        todo = [(kind or docs.detect_kind(p, Path(p).read_text(encoding="utf-8", errors="replace")), p) for p in paths]
    else:
        todo = sorted(lifecycle.find_docs(state.root).items())  # domain-definition first: it names the domains
        if not todo:
            raise WorkflowError(f"no feature-list.md or domain-definition.md under {state.root} (.claude/docs, docs)")
    scratch = progress.load(memory_id) if dry_run else None
    for doc_kind, path in todo:
        if scratch is not None:
            applied = docs.apply(scratch, docs.read(path, doc_kind))
            click.echo(f"{path} ({doc_kind}): would give {applied.summary()}")
        else:
            [(_, applied)] = lifecycle.import_docs(memory_id, {doc_kind: path}, only_changed=False)
            click.echo(f"{path} ({doc_kind}): {applied.summary()}")
        _print_warnings(applied.warnings)


@workflow.command("recalculate")
@pass_state
def recalculate(state: State) -> None:
    """Recompute feature, domain and phase totals from features, tasks and points."""
    data = progress.mutate(state.memory_id(), lambda d: d)
    c = progress.counts(data)
    click.echo(
        f"Recalculated: {c['featuresDone']}/{c['features']} features, {c['tasksDone']}/{c['tasks']} tasks, "
        f"{c['pointsDone']}/{c['points']} points; {len(data['domains'])} domain(s), {len(data['phases'])} phase(s)."
    )


@workflow.command("show")
@json_option
@pass_state
def show(state: State, as_json: bool) -> None:
    """progress.json: phases, domains, features and tasks."""
    data = progress.load(state.memory_id())
    if as_json:
        render.emit_json(data)
        return
    if data["phases"]:
        rows = [
            {"id": k, **v, "points": f"{v['completedPoints']}/{v['totalPoints']}"} for k, v in data["phases"].items()
        ]
        render.dict_table(rows, ["id", "name", "status", "points"], title="Phases")
    if data["domains"]:
        rows = [
            {"id": k, **v, "features": f"{v.get('completedFeatures', 0)}/{v.get('totalFeatures', 0)}"}
            for k, v in data["domains"].items()
        ]
        render.dict_table(rows, ["id", "name", "status", "features"], title="Domains")
    rows = [{"id": k, **v} for k, v in data["features"].items()]
    render.dict_table(rows, ["id", "name", "category", "status", "points", "note"], title="Features")
    rows = [{"id": k, **v, "dependencies": ", ".join(v.get("dependencies", []))} for k, v in data["tasks"].items()]
    render.dict_table(rows, ["id", "name", "featureId", "priority", "status", "points", "dependencies"], title="Tasks")


@workflow.group("feature")
def feature() -> None:
    """Add or change features in progress.json."""


def _feature_options(fn: Any) -> Any:
    for option in reversed(
        [
            click.option("--category", help="e.g. Core."),
            click.option("--domain", help="Domain code (default: the id's prefix, AUTH-001 → AUTH)."),
            click.option("--phase", help="Phase id (e.g. phase1); created when new."),
            click.option(
                "--points", type=click.FloatRange(0), help="Story points (used when it has no pointed tasks)."
            ),
            click.option("--status", type=STATUS, help="pending, in_progress, done or blocked."),
            click.option("--note", help="A note kept with it in progress.json."),
        ]
    ):
        fn = option(fn)
    return fn


def _fields(**values: Any) -> dict[str, Any]:
    out = {k: v for k, v in values.items() if v is not None}
    if isinstance(out.get("points"), float) and out["points"].is_integer():
        out["points"] = int(out["points"])
    return out


@feature.command("add")
@click.argument("feature_id", metavar="ID")
@click.argument("name")
@_feature_options
@pass_state
def feature_add(state: State, feature_id: str, name: str, **values: Any) -> None:
    """Add a feature (or update it when ID exists)."""
    progress.mutate(state.memory_id(), lambda d: progress.add_feature(d, feature_id, name, **_fields(**values)))
    click.echo(f"Feature {feature_id} saved.")


@feature.command("update")
@click.argument("feature_id", metavar="ID")
@click.option("--name", help="New name.")
@_feature_options
@pass_state
def feature_update(state: State, feature_id: str, name: str | None, **values: Any) -> None:
    """Change fields of an existing feature."""

    def change(data: dict[str, Any]) -> None:
        if feature_id not in data["features"]:
            raise progress.ProgressError(f"unknown feature '{feature_id}'")
        progress.add_feature(data, feature_id, name, **_fields(**values))

    progress.mutate(state.memory_id(), change)
    click.echo(f"Feature {feature_id} updated.")


@feature.command("status")
@click.argument("feature_id", metavar="ID")
@click.argument("new_status", metavar="STATUS", type=STATUS)
@click.option("--note", help="A note kept with the status change.")
@pass_state
def feature_status(state: State, feature_id: str, new_status: str, note: str | None) -> None:
    """Set a feature's status (pending, in_progress, done, blocked)."""
    progress.mutate(state.memory_id(), lambda d: progress.set_feature_status(d, feature_id, new_status, note))
    click.echo(f"Feature {feature_id}: {new_status}.")


@workflow.group("task")
def task() -> None:
    """Add or change tasks in progress.json."""


def _task_options(fn: Any) -> Any:
    for option in reversed(
        [
            click.option("--priority", type=PRIORITY, help="How urgent it is."),
            click.option("--depends-on", "dependencies", multiple=True, help="Task id this one needs (repeatable)."),
            click.option("--points", type=click.FloatRange(0), help="Story points."),
            click.option("--status", type=STATUS, help="pending, in_progress, done or blocked."),
            click.option("--note", help="A note kept with it in progress.json."),
            click.option("--force", is_flag=True, help="Allow done although dependencies are not."),
        ]
    ):
        fn = option(fn)
    return fn


@task.command("add")
@click.argument("task_id", metavar="ID")
@click.argument("name")
@click.option("--feature", "feature_id", help="The feature this task belongs to.")
@_task_options
@pass_state
def task_add(state: State, task_id: str, name: str, feature_id: str | None, **values: Any) -> None:
    """Add a task (or update it when ID exists)."""
    values["dependencies"] = list(values["dependencies"]) or None
    fields = _fields(featureId=feature_id, **values)
    progress.mutate(state.memory_id(), lambda d: progress.add_task(d, task_id, name, **fields))
    click.echo(f"Task {task_id} saved.")


@task.command("update")
@click.argument("task_id", metavar="ID")
@click.option("--name", help="New name.")
@click.option("--feature", "feature_id", help="Move it to this feature id.")
@_task_options
@pass_state
def task_update(state: State, task_id: str, name: str | None, feature_id: str | None, **values: Any) -> None:
    """Change fields of an existing task."""
    values["dependencies"] = list(values["dependencies"]) or None
    fields = _fields(featureId=feature_id, **values)

    def change(data: dict[str, Any]) -> None:
        if task_id not in data["tasks"]:
            raise progress.ProgressError(f"unknown task '{task_id}'")
        progress.add_task(data, task_id, name, **fields)

    progress.mutate(state.memory_id(), change)
    click.echo(f"Task {task_id} updated.")


@task.command("status")
@click.argument("task_id", metavar="ID")
@click.argument("new_status", metavar="STATUS", type=STATUS)
@click.option("--note", help="A note kept with the status change.")
@click.option("--force", is_flag=True, help="Mark done although dependencies are not done.")
@pass_state
def task_status(state: State, task_id: str, new_status: str, note: str | None, force: bool) -> None:
    """Set a task's status; done needs its dependencies done (or --force)."""
    progress.mutate(state.memory_id(), lambda d: progress.set_task_status(d, task_id, new_status, note, force))
    click.echo(f"Task {task_id}: {new_status}.")
