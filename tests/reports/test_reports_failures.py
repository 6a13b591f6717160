"""Failure classes and checkpoint reach rates in the reports of a real sweep: JSON and Markdown
as text, the HTML report in headless Chromium (the sweep's panel, a case's tables, a run's class
and conversation). The sweep runs through the CLI against the bundled OpenAI-compatible server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser_fixtures import Opened, headless_chromium
from tests.support.formats_fixtures import Project, farm, farm_process, make_project, read_report, result_of
from tests.support.servers import openai_server

CHECKPOINTS = [{"id": "greet", "assert": {"type": "contains", "value": "hello"}},
               {"id": "order", "after": ["greet"], "assert": {"type": "contains", "value": "latte"}}]
HOSTILE = "<img src=x onerror=window.__pwned=1>"


@pytest.fixture(scope="module")
def server() -> Any:
    with openai_server() as served:
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as launched:
        yield launched


def sweep(tmp_path: Path, host: str, fmt: str, *, own_process: bool = False) -> tuple[Project, Path]:
    """Two cases: a dynamic one reaching ``order`` in 2 of 4 runs, a plain one failing contains."""
    project = make_project(tmp_path, host)
    runs = project.root / "sim.py"
    runs.write_text("def play(messages, context):\n"
                    "    import json\n"
                    "    n = json.loads(messages[-1]['content'])['turn_number']\n"
                    "    return {'message': 'a latte' if n == 2 else 'tea', 'goal_achieved': n > 2}\n")
    flip = project.root / "flip.py"
    flip.write_text("def play(messages, context):\n"
                    "    return {'message': 'tea', 'goal_achieved': True}\n")
    cases = [{"id": "order-latte", "input": "hello", "checkpoints": CHECKPOINTS,
              "simulator": {"use": f"py:{runs}:play"}},
             {"id": "stuck", "input": "hello", "checkpoints": CHECKPOINTS, "simulator": {"use": f"py:{flip}:play"}},
             {"id": "rude", "input": HOSTILE, "assert": {"type": "contains", "value": "please"}}]
    suite = project.suite(cases)
    out = project.root / f"report.{fmt}"
    args = ("test", "-i", str(suite), "-o", str(out), "--runs", "2", "--no-progress")
    if own_process:
        done = farm_process(project, *args)
        assert done.returncode == 1, done.stderr
    else:
        result = farm(project, *args)
        assert result.exit_code == 1, result.output
    return project, out


def test_json_and_markdown_carry_classes_and_reach_rates(tmp_path: Path, server: Any) -> None:
    _, out = sweep(tmp_path, server.url, "json")
    report = read_report(out)
    assert report["summary"]["failure_classes"]["assertion:checkpoint:order"]["count"] == 2
    assert report["summary"]["failure_classes"]["assertion:contains"]["example"]["case_id"] == "rude"
    points = result_of(report, "stuck")["checkpoints"]
    assert [(p["id"], p["reached"], p["runs"], p["reach_rate"], p["reach_rate_ci"], p["first_unmet"])
            for p in points] == [("greet", 2, 2, 100.0, [34.2, 100.0], 0), ("order", 0, 2, 0.0, [0.0, 65.8], 2)]
    assert result_of(report, "order-latte")["checkpoints"][1]["avg_reached_at_turn"] == 2.0
    markdown = sweep(tmp_path / "md", server.url, "md")[1].read_text()
    assert "## Failure classes" in markdown
    assert "| order | yes | 0/2 | 0.0% | 0.0–65.8% | - | 2 |" in markdown
    assert "| assertion:checkpoint:order | 2 | run 1, turn 1: checkpoint:order: " in markdown  # a played turn


@pytest.mark.browser
def test_html_shows_classes_checkpoints_and_the_conversation(tmp_path: Path, server: Any, browser: Any) -> None:
    _, out = sweep(tmp_path, server.url, "html", own_process=True)  # playwright runs a loop in this one
    opened = Opened(browser, out)
    page = opened.page
    try:
        panel = page.locator("#failure-classes")
        assert panel.locator("tr.fc-row").count() == 2
        assert panel.locator("tr.fc-row").nth(0).inner_text().startswith("assertion:checkpoint:order\t2\t50%")
        page.locator("tr.case-row", has_text="stuck").click()
        detail = page.locator("tr.detail-row")
        cells = detail.locator("table.runs.mini").first.locator("tbody tr").nth(1).locator("td").all_inner_texts()
        assert cells[0] == "order" and cells[2] == "0 / 2" and "95% CI 0–65.8" in cells[3] and cells[5] == "2"
        assert detail.locator(".fclass", has_text="assertion:checkpoint:order · turn 1").count() == 2
        conversation = detail.locator("details.conversation").first
        assert conversation.locator("summary").inner_text() == "Conversation (1 turn)"
        conversation.locator("summary").click()
        assert conversation.locator("li").first.inner_text().splitlines() == ["User hello", "Agent hello",
                                                                              "✓ greet"]
        page.locator("tr.case-row", has_text="rude").click()
        assert page.evaluate("window.__pwned") is None
        assert opened.requests == [opened.url] and opened.blocked == [] and opened.problems == []
        page.screenshot(path=str(tmp_path / "failures.png"), full_page=True)
    finally:
        opened.context.close()
