"""The spec's JSON routes, in-process: each with good input and bad input (a clear 4xx)."""

# ruff: noqa: F811  (the `site` fixture is imported from web_support)
from __future__ import annotations

from web_support import TOKEN, Site, site  # noqa: F401

from memlane import config


def get(s: Site, path: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    r = s.client.get(path)
    return r.status_code, r.json()


def test_projects(site: Site) -> None:
    code, body = get(site, "/api/projects")
    assert code == 200 and [p["id"] for p in body["projects"]] == [site.project_id]


def test_sessions_paged(site: Site) -> None:
    code, body = get(site, "/api/sessions?page=1&pageSize=1")
    assert code == 200
    assert body["total"] == 2 and body["page"] == 1 and body["pageSize"] == 1 and body["hasMore"] is True
    assert body["sessions"][0]["sessionId"] == "s-two" and body["sessions"][0]["status"] == "active"
    assert get(site, "/api/sessions?page=2&pageSize=1")[1]["sessions"][0]["sessionId"] == "s-one"
    assert get(site, "/api/sessions?page=0")[0] == 400
    assert get(site, "/api/sessions?pageSize=abc") == (
        400,
        {"error": "pageSize must be a whole number from 1 to 200, got 'abc'"},
    )
    assert get(site, "/api/sessions?pageSize=201")[0] == 400


def test_session_detail(site: Site) -> None:
    code, body = get(site, "/api/sessions/s-one")
    assert code == 200
    assert body["stats"] == {"promptCount": 1, "responseCount": 1, "toolCount": 1, "eventCount": 4}
    assert [e["eventType"] for e in body["events"]][:2] == ["session_start", "user_prompt"]
    code, page = get(site, "/api/sessions/s-one?limit=2")
    assert len(page["events"]) == 2 and page["next"]
    rest = get(site, f"/api/sessions/s-one?limit=2&after={page['next']}")[1]["events"]
    assert [e["eventType"] for e in rest] == ["agent_response", "tool_observation"]
    assert get(site, "/api/sessions/nope")[0] == 404
    assert get(site, "/api/sessions/s-one?after=garbage")[0] == 400


def test_events_filtered_and_paged(site: Site) -> None:
    code, body = get(site, "/api/events?type=user_prompt")
    assert code == 200 and body["total"] == 3
    assert {e["eventType"] for e in body["events"]} == {"user_prompt"}
    first = body["events"][0]
    assert set(first) >= {"eventId", "eventType", "timestamp", "sessionId", "preview", "metadata", "citation"}
    assert first["metadata"]["tokenCount"] > 0
    code, one = get(site, "/api/events?limit=1&sessionId=s-one")
    assert one["total"] == 4 and len(one["events"]) == 1 and one["next"]
    assert get(site, "/api/events?type=bogus") == (
        400,
        {
            "error": "unknown event type 'bogus' (one of: user_prompt, agent_response, tool_observation, "
            "session_start, session_end, session_summary, compaction, task_update)"
        },
    )
    assert get(site, "/api/events?since=yesterdayish")[0] == 400
    assert get(site, "/api/events?limit=0")[0] == 400


def test_event_detail_and_related(site: Site) -> None:
    ev = site.answer  # type: ignore[attr-defined]
    code, body = get(site, f"/api/events/{ev.cite}")
    assert code == 200
    assert body["event"]["payload"]["content"] == ev.content
    assert body["related"]["previous"] and body["related"]["next"]
    assert get(site, "/api/events/mem:nothere")[0] == 404


def test_citation_with_where_it_was_injected(site: Site) -> None:
    ev = site.answer  # type: ignore[attr-defined]
    code, body = get(site, f"/api/citations/{ev.citation}")
    assert code == 200
    assert body["citation"]["cite"] == ev.cite and body["event"]["eventId"] == ev.id
    assert [(p["tier"], p["sessionId"]) for p in body["injectedInto"]] == [("full", "s-two")]
    assert get(site, "/api/citations/zzzzzz")[0] == 404


def test_citation_with_its_usage_level_and_citing_sessions(site: Site) -> None:
    """The learning loop's part of the record: uses by kind, the level and its counters, who cited it."""
    from memlane.store import NewEvent

    ev = site.answer  # type: ignore[attr-defined]
    with site.memory() as mem:
        mem.store.append(
            [NewEvent("agent_response", "s-three", f"As [mem:{ev.citation}] says: max_connections.", "c1")]
        )
        mem.catch_up()
    code, body = get(site, f"/api/citations/{ev.citation}")
    assert code == 200
    assert body["usage"]["cited"] == 1 and body["usage"]["fetched"] == 0 and "injected" in body["usage"]
    assert body["level"]["level"] == 1 and body["level"]["cited"] == 1
    assert [s["sessionId"] for s in body["citedIn"]] == ["s-three"]
    page = site.client.get(f"/events/{ev.id}").text
    assert "<dt>Level</dt><dd>L1" in page and "cited 1" in page
    with site.memory() as mem:
        mem.catch_up()  # the daemon's graduation job folds the fetch in
        assert mem.usage(ev.id)["counts"]["fetched"] == 1, "the event page is a fetch"


def test_injections(site: Site) -> None:
    code, body = get(site, "/api/injections?limit=5")
    assert code == 200
    told = [p for p in body["prompts"] if p["injection"]]
    assert len(told) == 1 and told[0]["injection"]["mode"] == "hybrid"
    assert sum(1 for p in body["prompts"] if p["injection"] is None) == 2
    assert get(site, "/api/injections?limit=-1")[0] == 400


def test_stats_and_timeline(site: Site) -> None:
    code, body = get(site, "/api/stats")
    assert code == 200
    assert body["storage"]["eventCount"] == 6 and body["sessions"]["total"] == 2
    assert body["injection"] == {"prompts": 3, "recorded": 1, "injected": 1, "rate": 0.333}
    assert body["redactions"]["private section"] == 1
    assert body["embeddings"]["pending"] == 5  # the session marker gets no vector
    assert body["knowledge"] == {"memory levels": {"L0": 6, "L1": 0, "L2": 0, "L3": 0, "L4": 0}}  # nothing used yet
    code, tl = get(site, "/api/stats/timeline?days=7")
    assert code == 200 and len(tl["daily"]) == 7 and tl["daily"][-1]["eventCount"] == 6
    assert tl["daily"][-1]["sessionCount"] == 2
    assert get(site, "/api/stats/timeline?days=0")[0] == 400


def test_config_get_and_patch(site: Site) -> None:
    code, body = get(site, "/api/config")
    assert code == 200 and body["config"]["injection"]["max_chars"] == 4000
    assert "injection.max_chars" in body["editable"] and "dashboard.password_hash" not in body["editable"]
    assert body["sources"]["injection.max_chars"] == "default"
    r = site.patch("/api/config", {"updates": {"injection.max_chars": 3000, "retrieval": {"cross_project": True}}})
    assert r.status_code == 200, r.text
    assert r.json()["config"] == {"injection.max_chars": 3000, "retrieval.cross_project": True}
    assert r.json()["restartRequired"] is True  # the daemon read 4000 when it started
    assert config.load().injection.max_chars == 3000
    assert get(site, "/api/config")[1]["sources"]["injection.max_chars"] == "config.toml"


def test_config_patch_refuses_bad_values_with_the_cli_message(site: Site) -> None:
    from click.testing import CliRunner

    from memlane.cli.main import cli

    cli_out = CliRunner().invoke(cli, ["config", "set", "injection.max_chars", "lots"])
    assert cli_out.exit_code == 1
    r = site.patch("/api/config", {"updates": {"injection.max_chars": "lots", "injection.max_results": 3}})
    assert r.status_code == 400
    assert cli_out.output.strip() == f"Error: {r.json()['error']}"
    assert config.load().injection.max_results == 5  # nothing written
    assert site.patch("/api/config", {"updates": {"injection.nope": 1}}).json()["error"].startswith("unknown key")
    assert site.patch("/api/config", {"updates": {"dashboard.password_hash": "x"}}).status_code == 400
    assert site.patch("/api/config", {"nothing": 1}).status_code == 400
    assert site.client.patch("/api/config", content=b"{", headers={"X-CSRF-Token": site.csrf}).status_code == 400


def test_search_takes_the_spec_shape_and_answers_with_meta(site: Site) -> None:
    body = {
        "project_id": site.project_id,
        "query": "pool timeout",
        "filters": {"eventType": ["agent_response"]},
        "options": {"topK": 3},
    }
    r = site.client.post("/api/search", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert [h["type"] for h in answer["results"]] == ["agent_response"]
    assert answer["meta"]["mode"] == "fts" and answer["meta"]["totalMatches"] == 3
    bad = {"project_id": site.project_id, "query": "pool", "options": {"minScore": 7}}
    r = site.client.post("/api/search", json=bad, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 400 and "minScore" in r.json()["error"]
    r = site.client.post(
        "/api/search", json={**bad, "options": None, "filters": "x"}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert r.status_code == 400


def test_an_unknown_project_is_a_404(site: Site) -> None:
    assert get(site, "/api/sessions?project=nope")[0] == 404


def test_search_from_the_dashboard_uses_its_project(site: Site) -> None:
    r = site.client.post("/api/search", json={"query": "pool timeout"}, headers={"X-CSRF-Token": site.csrf})
    assert r.status_code == 200 and r.json()["project_id"] == site.project_id
    assert site.client.post("/api/search", json={"query": "pool"}).status_code == 403  # no CSRF token
