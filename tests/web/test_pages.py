"""The dashboard's pages in-process: every page with good and bad input, hostile content rendered inert, edits
that reach the library (CLAUDE.md on disk, config.toml, forget)."""

# ruff: noqa: F811  (the `site` fixture is imported from web_support)
from __future__ import annotations

from pathlib import Path

import pytest
from web_support import Site, site  # noqa: F401

from memlane import config

PAGES = [
    "/",
    "/sessions",
    "/sessions/s-one",
    "/search",
    "/search?q=pool+timeout",
    "/told",
    "/stats",
    "/settings",
    "/regions",
    "/workflow",
    "/context",
    "/context?task=session_start",
    "/forget",
    "/export",
]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders(site: Site, path: str) -> None:
    r = site.client.get(path)
    assert r.status_code == 200, r.text[:500]
    assert "<title>" in r.text and "Events: 6" in r.text


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/sessions?page=zero", 400, "page must be a whole number"),
        ("/sessions/unknown-session", 404, "no session"),
        ("/events/mem:nothere", 404, "no event"),
        ("/m/nothere", 404, "no event"),
        ("/search?q=pool&layer=everything", 400, "layer must be"),
        ("/search?q=pool&type=bogus", 400, "unknown event type"),
        ("/search?q=pool&since=someday", 400, "is not a date"),
        ("/told?limit=1000", 400, "limit must be"),
        ("/stats?days=999", 400, "days must be"),
        ("/context?task=nope", 400, "unknown task type"),
        ("/events/page?after=nonsense", 400, "after must be"),
        ("/forget/preview?kind=who", 400, "kind must be"),
        ("/forget/preview?kind=range", 400, "give since, until or both"),
        ("/export/download?format=pdf", 400, "format must be"),
        ("/?project=unknown", 404, "unknown project id"),
    ],
)
def test_bad_input_is_a_clear_4xx(site: Site, path: str, status: int, says: str) -> None:
    r = site.client.get(path)
    assert r.status_code == status, r.text[:300]
    assert says in r.text


def test_stored_script_renders_as_text(site: Site) -> None:
    for path in ("/", "/sessions/s-two", "/told", "/search?q=window+pwned&layer=full"):
        html = site.client.get(path).text
        assert "<script>window.pwned" not in html, path
        assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html, path


def test_private_sections_show_a_lock_and_counts(site: Site) -> None:
    ev = site.memory().history(session="s-two", types=["user_prompt"], limit=5)[-1]
    html = site.client.get(f"/events/{ev.id}").text
    assert "🔒 private content (not stored)" in html
    assert "1 private section(s) removed" in html


def test_a_citation_opens_the_event_in_its_timeline(site: Site) -> None:
    ev = site.answer  # type: ignore[attr-defined]
    r = site.client.get(f"/m/{ev.citation}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/sessions/s-one?at={ev.id}#ev-{ev.id}"
    page = site.client.get(r.headers["location"]).text
    assert f'class="event type-agent_response focus" id="ev-{ev.id}"' in page


def test_search_shows_meta_highlights_and_layers(site: Site) -> None:
    html = site.client.get("/search?q=pool+timeout").text
    assert "3 event(s) hold every word" in html and "mode fts" in html
    assert "<mark>pool</mark>" in html and 'href="/m/mem:' in html
    assert 'class="mini-timeline"' in site.client.get("/search?q=pool+timeout&layer=timeline").text
    assert 'class="full-content"' in site.client.get("/search?q=pool+timeout&layer=full").text


def test_what_claude_was_told(site: Site) -> None:
    html = site.client.get("/told").text
    ev = site.answer  # type: ignore[attr-defined]
    assert html.count("Nothing recorded for this prompt.") == 2
    assert f'href="/m/{ev.cite}"' in html and "0.810" in html and "below threshold" in html


def test_scrolling_pages_by_cursor(site: Site) -> None:
    with site.memory() as mem:
        first = mem.page(limit=2)
    r = site.client.get(f"/events/page?after={first[-1].ts}|{first[-1].seq}")
    assert r.status_code == 200 and first[0].id not in r.text and first[1].id not in r.text
    assert r.text.count('class="event ') == 4


def test_settings_change_and_refusal_with_the_cli_message(site: Site) -> None:
    from click.testing import CliRunner

    from memlane.cli.main import cli

    ok = site.post("/settings/set", {"key": "injection.max_results", "value": "3"})
    assert ok.status_code == 200 and "config.toml" in ok.text
    assert config.load().injection.max_results == 3
    bad = site.post("/settings/set", {"key": "injection.max_results", "value": "many"})
    cli_out = CliRunner().invoke(cli, ["config", "set", "injection.max_results", "many"])
    message = cli_out.output.strip().removeprefix("Error: ")
    assert bad.status_code == 400 and message in bad.text.replace("&#39;", "'")
    assert config.load().injection.max_results == 3
    reset = site.post("/settings/unset", {"key": "injection.max_results"})
    assert reset.status_code == 200 and config.load().injection.max_results == 5
    assert site.post("/settings/set", {"key": "dashboard.password_hash", "value": "x"}).status_code == 400


CLAUDE_MD = """# Project

Notes kept by hand.

<!-- MEMORY_START: references -->
## Core
@docs/a.md
@docs/a.md
<!-- MEMORY_END: references -->
"""


@pytest.fixture
def claude_md(site: Site) -> Path:
    (site.root / "docs").mkdir()
    (site.root / "docs" / "a.md").write_text("a\n")
    (site.root / "docs" / "b.md").write_text("b\n")
    path = site.root / "CLAUDE.md"
    path.write_text(CLAUDE_MD)
    return path


def test_regions_cards_nested_by_heading(site: Site, claude_md: Path) -> None:
    html = site.client.get("/regions").text
    assert 'id="region-references"' in html and '<ul class="children">' in html and "📌" in html


def test_region_add_and_delete_write_claude_md(site: Site, claude_md: Path) -> None:
    r = site.post("/regions/add", {"region": "references", "kind": "direct-ref", "path": "@docs/b.md", "under": ""})
    assert r.status_code == 200 and "Added" in r.text
    assert "@docs/b.md" in claude_md.read_text()
    missing = site.post("/regions/add", {"region": "references", "kind": "direct-ref", "path": "@docs/none.md"})
    assert missing.status_code == 400 and "no such file" in missing.text
    with_missing = site.post(
        "/regions/add", {"region": "references", "kind": "direct-ref", "path": "@docs/none.md", "allow_missing": "1"}
    )
    assert with_missing.status_code == 200 and "@docs/none.md" in claude_md.read_text()
    from memlane.regions import RegionFile

    item = RegionFile.open(claude_md).doc.region("references").items[-1]
    gone = site.post("/regions/delete", {"region": "references", "item": item.id})
    assert gone.status_code == 200 and "@docs/none.md" not in claude_md.read_text()
    assert site.post("/regions/delete", {"region": "references", "item": "zz-nope"}).status_code == 400
    assert site.post("/regions/add", {"region": "nope", "kind": "text", "content": "x"}).status_code == 400
    assert site.post("/regions/whatever", {}).status_code == 400


def test_autofix_previews_a_diff_then_writes_only_what_was_previewed(site: Site, claude_md: Path) -> None:
    before = claude_md.read_text()
    preview = site.post("/regions/fix-preview", {})
    assert preview.status_code == 200 and '<span class="del">-@docs/a.md</span>' in preview.text
    assert claude_md.read_text() == before  # a preview writes nothing
    import re

    expected = re.search(r'name="expected" value="([0-9a-f]+)"', preview.text).group(1)  # type: ignore[union-attr]
    claude_md.write_text(before + "\nedited meanwhile\n")
    stale = site.post("/regions/fix-apply", {"expected": expected})
    assert stale.status_code == 400 and "changed since the preview" in stale.text
    claude_md.write_text(before)
    applied = site.post("/regions/fix-apply", {"expected": expected})
    assert applied.status_code == 200
    assert claude_md.read_text().count("@docs/a.md") == 1


def test_raw_editor_previews_then_writes(site: Site, claude_md: Path) -> None:
    text = "## Core\n@docs/b.md\n"
    preview = site.post("/regions/raw-preview", {"region": "references", "text": text})
    assert preview.status_code == 200 and "+@docs/b.md" in preview.text
    import re

    expected = re.search(r'name="expected" value="([0-9a-f]+)"', preview.text).group(1)  # type: ignore[union-attr]
    site.post("/regions/raw-apply", {"region": "references", "text": text, "expected": expected})
    assert "<!-- MEMORY_START: references -->\n## Core\n@docs/b.md\n<!-- MEMORY_END" in claude_md.read_text()
    assert claude_md.read_text().startswith("# Project\n\nNotes kept by hand.")
    marker = site.post("/regions/raw-preview", {"region": "references", "text": "<!-- MEMORY_END: references -->"})
    assert marker.status_code == 400 and "region marker" in marker.text


def test_validate_lists_findings(site: Site, claude_md: Path) -> None:
    r = site.post("/regions/validate", {})
    assert r.status_code == 200 and "duplicate" in r.text.lower()


def test_forget_an_event_after_a_preview(site: Site) -> None:
    ev = site.answer  # type: ignore[attr-defined]
    preview = site.client.get(f"/forget/preview?kind=event&event={ev.cite}")
    assert preview.status_code == 200 and "1 event(s) would be forgotten" in preview.text
    assert site.memory().get(ev.id)  # still there
    done = site.post("/forget", {"kind": "event", "event": ev.cite})
    assert done.status_code == 200 and 'data-forgot="1"' in done.text
    assert site.client.get(f"/events/{ev.id}").status_code == 404
    assert ev.id not in site.client.get("/").text


def test_forget_a_date_range(site: Site) -> None:
    r = site.client.get("/forget/preview?kind=range&since=1d")
    assert "6 event(s) would be forgotten" in r.text
    assert site.post("/forget", {"kind": "range", "until": "2000-01-01"}).text.count('data-forgot="0"') == 1
    assert site.post("/forget", {"kind": "range", "since": "2d", "until": "3d"}).status_code == 400


def test_export_counts_then_downloads(site: Site) -> None:
    assert "6 event(s) match" in site.client.get("/export").text
    r = site.client.get("/export/download?format=jsonl&session=s-one")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    assert len(r.text.splitlines()) == 4


def test_workflow_board(site: Site) -> None:
    from memlane.workflow import lifecycle, progress, store

    assert "has no workflow memory" in site.client.get("/workflow").text
    memory_id = store.check_id("shop-flow")
    lifecycle.init(str(site.root), "shop", memory_id, config.load().workflow)
    progress.mutate(memory_id, lambda d: progress.add_task(d, "T-1", "write the pool test"))
    html = site.client.get("/workflow").text
    assert "write the pool test" in html and "pending" in html


def test_knowledge_section_counts_tasks_and_replaced_memories(site: Site) -> None:
    with site.memory() as mem:
        mem.add_task("ship the pool fix", status="in_progress")
        mem.add_task("write the load test")
    html = site.client.get("/stats").text
    assert "<h2>Knowledge</h2>" in html
    section = html[html.index("<h2>Knowledge</h2>") :]
    assert "in_progress" in section and "pending" in section and "task" in section and "memory levels" in section
    data = site.client.get("/api/stats").json()["knowledge"]
    assert data["tasks"] == {"in_progress": 1, "pending": 1}


def test_project_switcher_remembers_the_choice(site: Site) -> None:
    r = site.client.get(f"/switch?project={site.project_id}&next=/stats", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/stats"
    assert "memlane_project=" in r.headers["set-cookie"]
    assert site.client.get("/switch?project=x&next=//evil.example", follow_redirects=False).headers["location"] == "/"


def test_stats_and_session_pages_show_continuity_with_what_raised_or_lowered_it(site: Site) -> None:
    from memlane.endless import service

    assert "No session scored yet." in site.client.get("/stats").text
    with site.memory() as mem:
        mem.catch_up()
        service.refresh(mem.store, mem.config, consolidate=True)
        (two,) = [c for c in mem.continuity() if c["session_id"] == "s-two"]
    html = site.client.get("/stats").text
    assert "<h2>Continuity between sessions <small>(mode: session)</small></h2>" in html
    assert f"{two['score']:.2f}" in html and "time: started" in html
    page = site.client.get("/sessions/s-two").text
    assert "<dt>Continuity</dt>" in page and 'href="/sessions/s-one"' in page and "files:" in page
