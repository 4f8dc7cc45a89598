"""feature-list.md / domain-definition.md parsers on realistic documents, and merging into progress."""

from __future__ import annotations

from pathlib import Path

import pytest
from wf_support import FIXTURES

from memlane.workflow import docs, progress


def has(item: dict, want: dict) -> bool:
    return all(item.get(k) == v for k, v in want.items())


def lines_warned(parsed: docs.Parsed) -> dict[int, str]:
    return {line: reason for line, _, reason in parsed.warnings}


def test_feature_list_headings_lists_and_tables() -> None:
    p = docs.read(str(FIXTURES / "feature-list.md"))
    assert p.kind == "feature-list"
    assert p.phases == {
        "phase1": {"name": "기반 구축", "features": []},
        "phase2": {"name": "핵심 기능", "features": []},
    }
    f = p.features
    assert has(f["COMMON-001"], {"name": "공통 레이아웃", "category": "Core", "points": 3, "phase": "phase1"})
    assert f["AUTH-001"]["note"] == "로그인 구현 중" and f["AUTH-001"]["category"] == "Core"
    assert f["AUTH-002"]["phase"] == "phase2" and f["AUTH-002"]["category"] == "Feature"
    assert has(f["ORDER-001"], {"name": "장바구니", "priority": "high", "points": 8, "status": "in_progress"})
    assert f["ORDER-003"]["status"] == "done" and f["ORDER-002"]["weak"] is True
    t = p.tasks
    assert has(t["AUTH-001-001"], {"featureId": "AUTH-001", "points": 3, "priority": "high", "status": "done"})
    assert has(t["AUTH-001-002"], {
        "name": "로그인 API 구현", "points": 5, "priority": "high", "dependencies": ["AUTH-001-001"],
        "status": "in_progress",
    })  # fmt: skip
    assert has(t["AUTH-001-003"], {"points": 2, "priority": "medium", "dependencies": ["AUTH-001-002"]})
    assert t["AUTH-001-003"]["name"] == "JWT 리프레시 토큰"
    assert has(t["AUTH-002-01"], {"name": "Google OAuth 연동", "points": 3, "priority": "high", "auto": True})
    assert t["COMMON-001-002"]["dependencies"] == ["COMMON-001-001"]
    warned = lines_warned(p)
    assert warned[3].startswith("quote outside") and warned[29] == "text not understood (ignored)"


def test_table_and_numbered_variants_report_what_they_skip() -> None:
    p = docs.read(str(FIXTURES / "feature-list-table.md"))
    f, t = p.features, p.tasks
    assert has(f["CART-001"], {"name": "Add to cart", "priority": "high", "points": 5, "status": "done"})
    assert f["CART-002"]["status"] == "in_progress" and f["CART-002"]["domain"] == "CART"
    assert f["CART-003"]["status"] == "pending" and "points" not in f["CART-003"]
    assert f["CART-001"]["phase"] == "sprint1" and p.phases["sprint1"]["name"] == "MVP"
    assert has(t["CART-001-02"], {"featureId": "CART-001", "dependencies": ["CART-001-01"], "status": "done"})
    assert t["CART-002-01"]["dependencies"] == ["CART-009-99"]
    assert has(f["CHK-001"], {"name": "Checkout flow", "status": "blocked", "points": 8})
    assert f["CHK-001"]["note"] == "waits for PG contract"
    assert t["CHK-001-001"]["status"] == "done" and t["CHK-001-001"]["featureId"] == "CHK-001"
    assert has(t["CHK-001-01"], {"name": "Payment step", "points": 3, "featureId": "CHK-001"})
    assert "CHK-002" in f and f["CHK-002"]["status"] == "pending"
    warned = lines_warned(p)
    assert 1 not in warned and 2 not in warned  # a setext (underlined) title
    assert warned[4] == "text not understood (ignored)"
    assert warned[15].startswith("heading is not a phase")
    assert warned[13] == "table row without a recognisable id (ignored)"
    assert "points 'three' is not a number" in warned[21]


def test_domain_definition() -> None:
    p = docs.read(str(FIXTURES / "domain-definition.md"))
    assert p.kind == "domain-definition"
    d = p.domains
    assert d["AUTH"]["name"] == "인증" and "권한" in d["AUTH"]["description"]
    assert d["ORDER"] == {"name": "주문", "scope": ["장바구니, 결제, 주문 내역"]}
    assert d["COMMON"]["name"] == "COMMON" and d["COMMON"]["description"] == "공통 UI와 유틸리티."
    assert d["NOTI"] == {"name": "알림", "description": "푸시/이메일 알림"} and d["ADMIN"]["name"] == "관리자"
    assert p.features["ORDER-002"]["domain"] == "ORDER" and p.features["AUTH-002"]["domain"] == "AUTH"
    warned = lines_warned(p)
    assert set(warned) == {20, 21}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("## AUTH: 인증", ("AUTH", "인증")),
        ("### 인증 (AUTH)", ("AUTH", "인증")),
        ("## 2. 결제 도메인 [PAY]", ("PAY", "결제")),
        ("## Domain: BILLING — Billing & invoices", ("BILLING", "Billing & invoices")),
        ("## 도메인: USER", ("USER", "USER")),
    ],
)
def test_domain_heading_variants(text: str, expected: tuple[str, str]) -> None:
    p = docs.parse(f"# 도메인\n\n{text}\n", "domain-definition")
    code, name = expected
    assert p.domains == {code: {"name": name}} and not p.warnings


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        ("- [x] A-001 Login (3pt)", {"name": "Login", "points": 3, "status": "done"}),
        ("- [ ] A-002 Logout points: 2", {"name": "Logout", "points": 2, "status": "pending"}),
        ("- A-003 **비밀번호 찾기** (5 점) [긴급]", {"name": "비밀번호 찾기", "points": 5, "priority": "critical"}),
        ("* `A-004`: 세션 만료 — SP: 1.5 — 🚧", {"name": "세션 만료", "points": 1.5, "status": "in_progress"}),
        ("- [!] A-005 2FA (P3) 상태: 보류", {"name": "2FA", "priority": "low", "status": "blocked"}),
        ("+ [A-006] Audit log [Infra] 3pts", {"name": "Audit log", "category": "Infra", "points": 3}),
        ("- ✅ A-007 Profile page", {"name": "Profile page", "status": "done"}),
    ],
)
def test_item_notations(line: str, fields: dict) -> None:
    p = docs.parse(f"# Features\n\n{line}\n", "feature-list")
    (item,) = p.features.values()
    assert item.items() >= fields.items(), item
    assert not p.warnings


def test_malformed_markdown_is_reported_with_line_numbers() -> None:
    text = "\n".join(
        [
            "# Features",  # 1
            "## Overview",  # 2
            "- some bullet",  # 3
            "| a | b |",  # 4
            "just words",  # 5
            "```",  # 6
            "- [ ] X-001 in code",  # 7
            "```",  # 8
            "- [x] B-001 Real one (two pt) priority: whenever",  # 9
            "```",  # 10
            "never closed",  # 11
        ]
    )
    p = docs.parse(text, "feature-list")
    warned = lines_warned(p)
    assert warned[2].startswith("heading is not a phase")
    assert warned[3] == "list item without an id outside a feature (ignored)"
    assert warned[4] == "table row without a header separator"
    assert warned[5] == "text not understood (ignored)"
    assert warned[6] == "code block ignored"
    assert "priority 'whenever' is not one of" in warned[9]
    assert warned[10].startswith("code block never closed")
    assert "X-001" not in p.features and p.features["B-001"]["status"] == "done"


def test_detect_kind() -> None:
    assert docs.detect_kind("x/feature-list.md", "") == "feature-list"
    assert docs.detect_kind("x/domain-definition.md", "") == "domain-definition"
    assert docs.detect_kind("x/notes.md", "## AUTH: 인증\n## PAY: 결제\n") == "domain-definition"
    assert docs.detect_kind("x/notes.md", "- A-001 x\n- A-002 y\n") == "feature-list"
    with pytest.raises(docs.DocError, match="unknown document kind"):
        docs.parse("", "recipes")


def test_unreadable_document(tmp_path) -> None:
    bad = tmp_path / "feature-list.md"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(docs.DocError, match="not UTF-8"):
        docs.read(str(bad))
    with pytest.raises(docs.DocError, match="cannot read"):
        docs.read(str(tmp_path / "missing.md"))


def test_apply_merges_and_keeps_progress() -> None:
    data = progress.new()
    domains = docs.apply(data, docs.read(str(FIXTURES / "domain-definition.md")))
    assert "domain AUTH" in domains.added and not [w for w in domains.warnings if "no name" in w[2]]
    features = docs.apply(data, docs.read(str(FIXTURES / "feature-list.md")))
    progress.recalculate(progress.validate(data))
    assert data["features"]["AUTH-001"]["name"] == "사용자 인증" and data["features"]["AUTH-001"]["domain"] == "AUTH"
    assert data["domains"]["AUTH"]["name"] == "인증" and data["domains"]["ORDER"]["totalFeatures"] == 3
    assert data["phases"]["phase1"]["features"] == ["COMMON-001", "AUTH-001"]
    assert data["phases"]["phase1"]["totalPoints"] == 13 and data["phases"]["phase1"]["completedPoints"] == 6
    assert data["tasks"]["AUTH-001-002"]["status"] == "in_progress"
    assert "feature AUTH-001" in features.updated and "task AUTH-001-001" in features.added
    # progress made elsewhere is not undone by a re-import: an unchecked box never moves an item back
    progress.set_task_status(data, "AUTH-002-01", "in_progress")
    progress.set_task_status(data, "AUTH-001-003", "done", force=True)
    data["tasks"]["AUTH-001-003"]["note"] = "hand note"
    again = docs.apply(data, docs.read(str(FIXTURES / "feature-list.md")))
    assert data["tasks"]["AUTH-002-01"]["status"] == "in_progress"
    assert data["tasks"]["AUTH-001-003"]["status"] == "done" and data["tasks"]["AUTH-001-003"]["note"] == "hand note"
    assert not again.added and len(data["tasks"]) == 8


def test_auto_ids_follow_task_names() -> None:
    data = progress.new()
    docs.apply(data, docs.parse("### A-001 Feature\n- [ ] first\n- [ ] second\n", "feature-list"))
    assert {t["name"]: tid for tid, t in data["tasks"].items()} == {"first": "A-001-01", "second": "A-001-02"}
    progress.set_task_status(data, "A-001-02", "done")
    docs.apply(data, docs.parse("### A-001 Feature\n- [ ] new zero\n- [ ] first\n- [ ] second\n", "feature-list"))
    names = {t["name"]: tid for tid, t in data["tasks"].items()}
    assert names["first"] == "A-001-01" and names["second"] == "A-001-02"
    assert names["new zero"] not in ("A-001-01", "A-001-02")
    assert data["tasks"]["A-001-02"]["status"] == "done"


def test_apply_reports_dangling_references() -> None:
    data = progress.new()
    parsed = docs.parse(
        "| Task ID | Task | Feature | Depends |\n|---|---|---|---|\n| Q-1-1 | t | Q-1 | Q-9-9 |\n", "feature-list"
    )
    applied = docs.apply(data, parsed)
    reasons = [w[2] for w in applied.warnings]
    assert "unknown dependency 'Q-9-9' (dropped)" in reasons
    assert data["tasks"]["Q-1-1"]["dependencies"] == [] and progress.validate(data)


def test_labelled_ids_in_headings_and_items() -> None:
    p = docs.parse("# F\n\n### Feature: AUTH-009 Labelled\n- Task: AUTH-009-001 first (1pt)\n", "feature-list")
    assert p.features["AUTH-009"]["name"] == "Labelled" and p.tasks["AUTH-009-001"]["points"] == 1
    assert not p.warnings


def test_domain_definition_lists_features_under_a_domain() -> None:
    text = "# 도메인\n\n## ORDER: 주문\n### ORDER-001 장바구니\n- ORDER-002 결제\n- 쿠폰 적용\n"
    p = docs.parse(text, "domain-definition")
    assert p.features["ORDER-001"] == {"line": 4, "name": "장바구니", "domain": "ORDER"}
    assert p.features["ORDER-002"]["domain"] == "ORDER" and not p.tasks
    assert p.domains["ORDER"]["scope"] == ["쿠폰 적용"] and not p.warnings


def documented(kind: str) -> str:
    """The example of ``kind`` in docs/workflow.md, without its ← annotations."""
    guide = Path(__file__).resolve().parents[2] / "docs" / "workflow.md"
    if not guide.exists():
        pytest.skip("docs/workflow.md not present")
    block = guide.read_text().split(f"### {kind}.md", 1)[1].split("```markdown\n", 1)[1].split("```", 1)[0]
    return "\n".join(line.split("  ←")[0].rstrip() for line in block.splitlines())


def test_documented_domain_definition_example() -> None:
    p = docs.parse(documented("domain-definition"), "domain-definition")
    assert not p.warnings and set(p.domains) == {"AUTH", "ORDER", "NOTI"}
    assert p.domains["AUTH"]["description"].endswith("토큰 관리") and p.features["ORDER-001"]["domain"] == "ORDER"


def test_documented_feature_list_example() -> None:
    p = docs.parse(documented("feature-list"), "feature-list")
    assert not p.warnings
    assert set(p.features) == {"AUTH-001", "ORDER-001", "ORDER-002"}
    assert p.tasks["ORDER-001-001"]["featureId"] == "ORDER-001" and p.tasks["AUTH-001-01"]["points"] == 2
    assert p.features["ORDER-002"]["status"] == "in_progress" and p.features["AUTH-001"]["note"] == "로그인 구현 중"
