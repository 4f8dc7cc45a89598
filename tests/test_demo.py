from memlane import demo


def test_demo_replays_through_real_hooks_and_injects_context() -> None:
    lines: list[str] = []
    injected = demo.run(echo=lines.append)
    assert "[mem:" in injected and "pool" in injected
    assert "hunter2" not in "\n".join(lines) and "s3cr3tpass" not in "\n".join(lines)
    assert any("Previous session" in line for line in lines)
