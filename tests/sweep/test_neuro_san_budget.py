"""neuro-san's top-level ``timeout_in_seconds`` bounds the whole test, all its ``success_ratio``
runs together (SPEC 6): runs not started when it is spent are not run, a running one gets what is
left. A real python agent that takes a second per answer, one run at a time, through the CLI.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.formats_fixtures import farm, make_project, read_report

SLOW = "import time\n\ndef respond(messages, context):\n    time.sleep(1.0)\n    return 'Beatles'\n"


def test_the_budget_spans_every_run_of_the_test(tmp_path: Path) -> None:
    project = make_project(tmp_path, "http://127.0.0.1:9")  # the connector is never used here
    (project.root / "slow.py").write_text(SLOW)
    suite = project.agent_dir / "tests" / "beatles.hocon"
    suite.write_text('success_ratio = "3/5"\ntimeout_in_seconds = 2.5\n'
                     'interactions = [{text = "Who did Yellow Submarine?",'
                     ' response { text { keywords = Beatles } }}]\n')
    out = project.root / "r.json"
    result = farm(project, "test", "-i", str(suite), "-n", "py:slow.py:respond", "--parallel", "1", "-o", str(out))
    assert result.exit_code == 1, result.output
    [case] = read_report(out)["results"]
    details = case["run_details"]
    assert case["runs"] in (2, 3) and case["required_passes"] == 3  # a loaded machine may start only two
    assert [d["status"] for d in details[:2]] == ["passed", "passed"]
    if len(details) == 3:
        assert details[2]["status"] == "timeout" and "what was left of the test's 2.5s" in details[2]["error"]
