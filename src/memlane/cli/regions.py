"""``memlane regions list|show|add|update|delete|edit|validate|fix|create|remove|sync``.

Thin wrappers over ``memlane.regions``. The file is the project's CLAUDE.md unless ``--file`` names
another; line numbers are 0-based everywhere (the spec's data model), in text and JSON output alike.

Why one module (~440 lines): one click group with ten thin subcommands over ``memlane.regions``, all
sharing the ``--file``/``--json`` options and the same rendering of a region.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from memlane import config, project
from memlane.cli import render
from memlane.regions import edit, sync
from memlane.regions.fileio import RegionFile
from memlane.regions.fix import fix, unified_diff
from memlane.regions.model import (
    CodeBlock,
    DirectRef,
    Finding,
    Heading,
    IndirectRef,
    Item,
    RegionError,
    Text,
    make_item,
)
from memlane.regions.validate import validate

F = TypeVar("F", bound=Callable[..., Any])
ICONS = {"heading": "📌", "direct-ref": "🔗", "indirect-ref": "💡", "code-block": "💻", "text": "📝"}


def _common(fn: F) -> F:
    fn = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")(fn)
    return click.option(
        "--file",
        "file",
        type=click.Path(dir_okay=False),
        help="The file to act on (default: CLAUDE.md at the project root).",
    )(fn)


def _dry_run(fn: F) -> F:
    return click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")(fn)


def _root_options() -> tuple[str | None, str | None]:
    """``-C`` and ``--project-id`` from the root command (absent when this group runs on its own)."""
    obj = click.get_current_context().find_root().obj
    return getattr(obj, "cwd", None), getattr(obj, "project_id", None)


def _project_root() -> Path:
    cwd, project_id = _root_options()
    if project_id:
        return project.resolve(None, project_id).root
    return project.find_root(cwd or os.getcwd())


def _target(file: str | None) -> tuple[Path, Path]:
    """(file to act on, project root it belongs to)."""
    if file:
        path = Path(file).absolute()
        return path, project.find_root(path.parent)
    root = _project_root()
    return root / "CLAUDE.md", root


def _open(file: str | None) -> tuple[RegionFile, Path]:
    path, root = _target(file)
    return RegionFile.open(path), root


def _finish(rf: RegionFile, dry_run: bool, as_json: bool, summary: str, payload: dict[str, Any]) -> None:
    """Write (unless dry run) and report: the diff for a dry run, else one line or JSON."""
    diff = unified_diff(rf.original, rf.doc.render(), rf.path.name)
    written = False if dry_run else rf.save()
    if as_json:
        render.emit_json({"file": str(rf.path), "changed": bool(diff), "written": written, **payload, "diff": diff})
    elif dry_run:
        click.echo(diff or "No change.", nl=not diff)
    else:
        click.echo(summary if diff else "No change.")


@click.group("regions")
def regions() -> None:
    """Managed regions of CLAUDE.md (<!-- MEMORY_START: name --> … <!-- MEMORY_END: name -->)."""


# ---- reading -----------------------------------------------------------------------------------


@regions.command("list")
@_common
def list_(file: str | None, as_json: bool) -> None:
    """Regions in the file with their type and size."""
    rf, _ = _open(file)
    rows = [
        {"name": r.name, "type": r.type, "start_line": r.start, "end_line": r.end, "items": len(r.items)}
        for r in rf.doc.regions
    ]
    if as_json:
        render.emit_json({"file": str(rf.path), "regions": rows, "issues": [f.to_dict() for f in rf.doc.issues]})
        return
    if not rows:
        click.echo(f"No managed regions in {rf.path}.")
    else:
        render.dict_table(rows, ["name", "type", "start_line", "end_line", "items"], title=str(rf.path))
    for issue in rf.doc.issues:
        render.err_console.print(f"{issue.severity}: line {issue.line}: {issue.message}", markup=False)


@regions.command("show")
@click.argument("name")
@click.option("--flat", is_flag=True, help="Items in file order instead of nested under headings.")
@_common
def show(name: str, flat: bool, file: str | None, as_json: bool) -> None:
    """One region's items, nested under their headings, with their ids."""
    rf, _ = _open(file)
    region = rf.doc.region(name)
    if as_json:
        render.emit_json(region.to_dict(tree=not flat))
        return
    click.echo(f"{region.name}  ({region.type}, lines {region.start}-{region.end}, {len(region.items)} item(s))")
    _print_tree(region.items if flat else region.tree, "", flat)


def _print_tree(items: list[Item], prefix: str, flat: bool) -> None:
    for n, item in enumerate(items):
        last = n == len(items) - 1
        click.echo(f"{prefix}{'└─' if last else '├─'} {ICONS[item.kind]} {_label(item)}  [{item.id}, line {item.line}]")
        if not flat and item.children:
            _print_tree(item.children, prefix + ("   " if last else "│  "), flat)


def _label(item: Item) -> str:
    if isinstance(item, Heading):
        return f"{'#' * item.level} {item.text}"
    if isinstance(item, DirectRef):
        return item.path
    if isinstance(item, IndirectRef):
        return f"`{item.path}` - {item.description}" if item.description else f"`{item.path}` (no description)"
    if isinstance(item, CodeBlock):
        lines = item.content.count("\n") + 1 if item.content else 0
        return f"code {item.language or '(no language)'}, {lines} line(s)" + ("" if item.terminated else ", unclosed")
    return render.short(item.raw, 80)


# ---- editing -----------------------------------------------------------------------------------


def _read_value(value: str | None) -> str | None:
    return sys.stdin.read() if value == "-" else value


def _position(value: str) -> str | int:
    if value in ("start", "end"):
        return value
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter("give start, end or an item index", param_hint="--position") from None


def _new_item(
    heading: str | None,
    level: int | None,
    ref: str | None,
    indirect: str | None,
    desc: str | None,
    code: str | None,
    lang: str,
    text: str | None,
    parent_level: int | None,
) -> Item:
    given = {"heading": heading, "ref": ref, "indirect": indirect, "code": code, "text": text}
    chosen = [k for k, v in given.items() if v is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --heading, --ref, --indirect, --code, --text")
    if desc is not None and chosen != ["indirect"]:
        raise click.UsageError("--desc goes with --indirect")
    if heading is not None:
        # Under a heading, a new heading defaults to one level deeper so that it nests there.
        return make_item("heading", text=heading, level=level or min((parent_level or 1) + 1, 6))
    if ref is not None:
        return make_item("direct-ref", path=ref)
    if indirect is not None:
        return make_item("indirect-ref", path=indirect, description=desc or "")
    if code is not None:
        return make_item("code-block", content=_read_value(code) or "", language=lang)
    return make_item("text", content=_read_value(text) or "")


def _check_ref(path: str, root: Path, base: Path) -> None:
    """A reference to a file that is not there is the first thing `regions validate` would report: refuse it."""
    from memlane.regions.validate import candidates, exists

    cfg = config.load().regions
    if not exists(path, root, cfg, base):
        tried = ", ".join(str(p) for p in candidates(path, root, cfg, base))
        raise click.ClickException(f"{path}: no such file (looked for {tried}); create it or pass --allow-missing")


@regions.command("add")
@click.argument("region")
@click.option("--heading", help="Add a heading with this text.")
@click.option("--level", type=click.IntRange(1, 6), help="Heading level (default 2, or one below --under).")
@click.option("--ref", help="Add a direct reference (@context/… or any @path).")
@click.option("--indirect", help="Add an indirect reference (path); give --desc too.")
@click.option("--desc", help="The indirect reference's description.")
@click.option("--code", help="Add a code block with this content ('-' reads stdin).")
@click.option("--lang", default="", help="The code block's language.")
@click.option("--text", help="Add a paragraph of text ('-' reads stdin).")
@click.option("--position", default="end", show_default=True, help="start, end or the index of the item to go before.")
@click.option("--under", help="Add under this heading (id or exact text).")
@click.option("--create", is_flag=True, help="Create the region (at the end of the file) if it does not exist.")
@click.option("--allow-missing", is_flag=True, help="Accept a reference to a file that does not exist (yet).")
@_dry_run
@_common
def add(
    region: str,
    heading: str | None,
    level: int | None,
    ref: str | None,
    indirect: str | None,
    desc: str | None,
    code: str | None,
    lang: str,
    text: str | None,
    position: str,
    under: str | None,
    create: bool,
    allow_missing: bool,
    dry_run: bool,
    file: str | None,
    as_json: bool,
) -> None:
    """Add an item to a region."""
    rf, root = _open(file)
    if create and rf.doc.find(region) is None:
        edit.create_region(rf.doc, region)
    parent_level = rf.doc.region(region).heading(under).level if under else None
    item = _new_item(heading, level, ref, indirect, desc, code, lang, text, parent_level)
    where = _position(position)
    target = ref if ref is not None else indirect
    if target is not None and not allow_missing:
        rf.doc.region(region)  # an unknown region is the first thing to say
        _check_ref(target, root, rf.path.parent)
    added = edit.add_item(rf.doc, region, item, where, under)
    summary = f"Added {added.id} to region '{region}' at line {added.line} of {rf.path}."
    _finish(rf, dry_run, as_json, summary, {"region": region, "item": added.to_dict()})


@regions.command("update")
@click.argument("region")
@click.argument("item_id")
@click.option("--text", help="New heading text, or new paragraph text ('-' reads stdin).")
@click.option("--level", type=click.IntRange(1, 6), help="New heading level.")
@click.option("--path", help="New reference path.")
@click.option("--desc", help="New indirect reference description.")
@click.option("--code", help="New code block content ('-' reads stdin).")
@click.option("--lang", help="New code block language.")
@_dry_run
@_common
def update(
    region: str,
    item_id: str,
    text: str | None,
    level: int | None,
    path: str | None,
    desc: str | None,
    code: str | None,
    lang: str | None,
    dry_run: bool,
    file: str | None,
    as_json: bool,
) -> None:
    """Change an item's fields (the others stay); its id changes with its content."""
    rf, _ = _open(file)
    old = rf.doc.region(region).item(item_id)
    changes = _changes(old, _read_value(text), level, path, desc, _read_value(code), lang)
    if not changes:
        raise click.UsageError("nothing to change: give --text, --level, --path, --desc, --code or --lang")
    new = edit.update_item(rf.doc, region, old.id, **changes)
    summary = f"Updated {old.id} in region '{region}' (now {new.id}, line {new.line})."
    _finish(rf, dry_run, as_json, summary, {"region": region, "old_id": old.id, "item": new.to_dict()})


def _changes(
    item: Item,
    text: str | None,
    level: int | None,
    path: str | None,
    desc: str | None,
    code: str | None,
    lang: str | None,
) -> dict[str, Any]:
    """CLI options to item fields: --text is a heading's text or a paragraph's content, --code a block's."""
    given = {"text": text, "level": level, "path": path, "description": desc, "content": code, "language": lang}
    if isinstance(item, Text) and text is not None:
        given["content"], given["text"] = text, None
    changes = {k: v for k, v in given.items() if v is not None}
    unknown = sorted(set(changes) - set(item.EDITABLE))
    if unknown:
        options = {"text": "--text", "level": "--level", "path": "--path", "description": "--desc"}
        options |= {"content": "--code", "language": "--lang"}
        raise click.UsageError(f"a {item.kind} takes no {', '.join(options[k] for k in unknown)}")
    return changes


@regions.command("delete")
@click.argument("region")
@click.argument("item_id")
@click.option("--section", is_flag=True, help="For a heading: also delete everything nested under it.")
@_dry_run
@_common
def delete(region: str, item_id: str, section: bool, dry_run: bool, file: str | None, as_json: bool) -> None:
    """Delete an item, or with --section a heading and its whole section."""
    rf, _ = _open(file)
    if section:
        gone: Item = edit.delete_section(rf.doc, region, item_id)
        what = f"section '{gone.raw}'"
    else:
        gone = edit.delete_item(rf.doc, region, item_id)
        what = gone.id
    summary = f"Deleted {what} from region '{region}'."
    _finish(rf, dry_run, as_json, summary, {"region": region, "item": gone.to_dict(), "section": section})


@regions.command("create")
@click.argument("name")
@_dry_run
@_common
def create(name: str, dry_run: bool, file: str | None, as_json: bool) -> None:
    """Create an empty region at the end of the file."""
    rf, _ = _open(file)
    region = edit.create_region(rf.doc, name)
    summary = f"Created region '{name}' at lines {region.start}-{region.end} of {rf.path}."
    _finish(rf, dry_run, as_json, summary, {"region": name})


@regions.command("remove")
@click.argument("name")
@_dry_run
@_common
def remove(name: str, dry_run: bool, file: str | None, as_json: bool) -> None:
    """Remove a region: its markers and everything between them."""
    rf, _ = _open(file)
    region = edit.remove_region(rf.doc, name)
    summary = f"Removed region '{name}' ({len(region.items)} item(s)) from {rf.path}."
    _finish(rf, dry_run, as_json, summary, {"region": name, "items": len(region.items)})


@regions.command("edit")
@click.argument("name")
@click.option("--allow-missing", is_flag=True, help="Accept references to files that do not exist (yet).")
@_dry_run
@_common
def edit_cmd(name: str, allow_missing: bool, dry_run: bool, file: str | None, as_json: bool) -> None:
    """Edit a region's body in $VISUAL / $EDITOR; it is checked before anything is written.

    The text between the markers opens in your editor. On save it must hold no region marker and pass the
    checks of `regions validate` that were passing before (a missing reference only with --allow-missing);
    otherwise nothing is written and your text is kept in a file named in the message. The file is
    replaced atomically, and only if nobody changed it while you edited.
    """
    rf, root = _open(file)
    current = edit.body_text(rf.doc, name)
    rf.doc.require_well_formed()
    edited = click.edit(current, extension=".md", require_save=False)
    if edited is None or edited == current:
        if as_json:
            render.emit_json({"file": str(rf.path), "region": name, "changed": False, "written": False, "diff": ""})
        else:
            click.echo("No change.")
        return
    try:
        _apply_body(rf, root, name, edited, allow_missing)
        region = rf.doc.region(name)
        where = f"{len(region.items)} item(s), lines {region.start}-{region.end}"
        summary = f"Updated region '{name}' of {rf.path} ({where})."
        _finish(rf, dry_run, as_json, summary, {"region": name, "items": len(region.items)})
    except RegionError as exc:
        kept = _keep(edited, name)
        raise RegionError(f"{str(exc).removesuffix('; nothing written, run the command again')}; "
                          f"nothing written, your text is in {kept}") from exc  # fmt: skip


def _apply_body(rf: RegionFile, root: Path, name: str, text: str, allow_missing: bool) -> None:
    """Put ``text`` in as the region's body; refuse what makes `regions validate` fail where it passed."""
    cfg = config.load().regions
    before = {(f.code, f.message) for f in validate(rf.doc, root, cfg, rf.path.parent) if f.severity == "error"}
    edit.replace_body_text(rf.doc, name, text)
    new = [
        f
        for f in validate(rf.doc, root, cfg, rf.path.parent)
        if f.severity == "error" and (f.code, f.message) not in before
        and not (allow_missing and f.code == "missing-ref")
    ]  # fmt: skip
    if new:
        first = new[0]
        more = f" (and {len(new) - 1} more)" if len(new) > 1 else ""
        raise RegionError(f"line {first.line}: {first.code}: {first.message}{more}")


def _keep(text: str, name: str) -> str:
    """The edited text, saved where the user can take it back from (a refused edit must not lose work)."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix=f"memlane-region-{name}-", suffix=".md")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


# ---- checking ----------------------------------------------------------------------------------


def _print_findings(findings: list[Finding], path: Path) -> None:
    for f in findings:
        where = f" [{f.region}]" if f.region else ""
        click.echo(f"{path.name} line {f.line}: {f.severity} {f.code}{where}: {f.message}")
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")}
    fixable = sum(1 for f in findings if f.fixable)
    if not findings:
        click.echo(f"{path.name}: no problems.")
    else:
        tail = f" ({fixable} fixable with `memlane regions fix`)" if fixable else ""
        click.echo(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s){tail}.")


@regions.command("validate")
@click.option("--strict", is_flag=True, help="Exit with status 1 on warnings too.")
@_common
@click.pass_context
def validate_cmd(ctx: click.Context, strict: bool, file: str | None, as_json: bool) -> None:
    """Check markers, duplicate and missing references, descriptions. Exit status 1 on errors."""
    rf, root = _open(file)
    findings = validate(rf.doc, root, config.load().regions, rf.path.parent)
    failing = {"error", "warning"} if strict else {"error"}
    ok = not any(f.severity in failing for f in findings)
    if as_json:
        render.emit_json({"file": str(rf.path), "ok": ok, "findings": [f.to_dict() for f in findings]})
    else:
        _print_findings(findings, rf.path)
    if not ok:
        ctx.exit(1)


@regions.command("fix")
@_dry_run
@_common
def fix_cmd(dry_run: bool, file: str | None, as_json: bool) -> None:
    """Remove duplicate and missing direct references, move regions to the end (in that order)."""
    rf, root = _open(file)
    result = fix(rf.doc, root, config.load().regions, rf.path.parent)
    written = False if dry_run else rf.save()
    if as_json:
        actions = [a.to_dict() for a in result.actions]
        diff = result.diff(rf.path.name)
        render.emit_json(
            {"file": str(rf.path), "changed": result.changed, "written": written, "actions": actions, "diff": diff}
        )
        return
    if dry_run:
        click.echo(result.diff(rf.path.name) or "Nothing to fix.", nl=not result.changed)
        return
    for action in result.actions:
        click.echo(f"line {action.line}: {action.message}")
    click.echo(f"Fixed {rf.path}." if result.changed else "Nothing to fix.")


@regions.command("sync")
@_dry_run
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def sync_cmd(dry_run: bool, as_json: bool) -> None:
    """Write the 'memlane' region of the project's CLAUDE.md (memory import + what memlane knows).

    Only that region is ever written; CLAUDE.md is created at the project root if missing.
    """
    cwd, project_id = _root_options()
    root, stats, last = sync.collect(cwd, project_id)
    result = sync.sync(root, stats, last, dry_run=dry_run)
    if as_json:
        render.emit_json({**result.to_dict(), "written": result.changed and not dry_run})
    elif dry_run:
        click.echo(result.diff or "No change.", nl=not result.diff)
    elif not result.changed:
        click.echo(f"Region 'memlane' in {result.path} is up to date.")
    else:
        verb = "Created" if result.created_file else "Updated"
        click.echo(f"{verb} {result.path} (region 'memlane').")
