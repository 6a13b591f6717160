"""``farm judge-check REPORT`` (SPEC 23): a report's judged outputs judged again, past the cache.

A sweep of a coin agent (``yes``/``no``) is judged by a scripted OpenAI-compatible judge, then
``farm judge-check`` asks it again: the script says each verdict per output, so the flip counts and
the failures the judge alone explains are known exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.coin import coin
from tests.fleet_project import COIN, farm_env, run_farm, write_connector, write_suite
from tests.scripted_judge import ScriptedJudge, scripted_judge
from tests.servers import Served

RUNS = 6
OUTPUTS = ["yes" if coin("c", run) < 0.5 else "no" for run in range(1, RUNS + 1)]
SCRIPT = {"no": [False, True, True, False, False, False, False], "yes": [True] * 7}
"""Per output, its verdicts in order: the sweep asks once (cached), judge-check then asks again.
"no" fails in the sweep, then passes 2 of 3 (a flip the judge alone explains), then fails 3 of 3."""


@pytest.fixture
def judged(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str], ScriptedJudge]]:
    assert set(OUTPUTS) == {"yes", "no"}  # the coin gives both answers
    with scripted_judge(lambda output, n, m: SCRIPT[output][m]) as (served, server):
        report = _sweep(tmp_path, served)
        yield report, farm_env(tmp_path), server


def _sweep(tmp_path: Path, served: Served) -> Path:
    write_connector(tmp_path, served.url)
    write_suite(tmp_path, "judged.jsonl", [
        {"id": "c", "input": "hi", "metadata": {"p": 0.5}, "assert": {"type": "agent", "value": "says yes",
                                                                      "use": "local.llm"}},
        {"id": "plain", "input": "x", "assert": {"type": "contains", "value": "y"}}])
    out = tmp_path / "report.json"
    proc = run_farm(tmp_path, "-i", "judged.jsonl", "-n", COIN, "--runs", str(RUNS), "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    return out


def judge_check(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "farm", "judge-check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


def _document(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_every_distinct_judged_output_is_judged_k_times_again(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                                              tmp_path: Path) -> None:
    report, env, server = judged
    before = server.calls
    assert before == 2  # the sweep: one verdict per distinct output, the rest from the judge cache
    out = tmp_path / "trust.json"
    proc = judge_check(tmp_path, env, str(report), "--repeats", "3", "-o", str(out), "-o", str(tmp_path / "t.md"))
    assert proc.returncode == 0, proc.stderr
    assert server.calls - before == 2 * 3  # two distinct outputs, three fresh verdicts each: no cache
    doc = _document(out)
    assert (doc["repeats"], doc["calls"], doc["errors"]) == (3, 6, 0)
    [criterion] = doc["criteria"]
    assert {k: criterion[k] for k in ("case", "turn", "check", "criterion", "judge", "outputs", "flipped")} == {
        "case": "c", "turn": 1, "check": "agent", "criterion": "says yes", "judge": "local.llm", "outputs": 2,
        "flipped": 1}
    assert criterion["judge_flip_rate"] == 0.5 and criterion["judge_noisy"] is False  # 2 outputs prove little
    low, high = criterion["judge_flip_rate_ci"]
    assert 0 < low < 0.5 < high < 1
    failures = OUTPUTS.count("no")
    assert doc["cases"] == [{"id": "c", "failures": failures, "judge_alone": failures, "judge_alone_share": 1.0}]
    assert "judge-noisy" in proc.stdout and "says yes" in proc.stdout
    assert "| c | 1 | agent | says yes | 2 | 1 | 50.0% |" in (tmp_path / "t.md").read_text()
    again = judge_check(tmp_path, env, str(report), "--repeats", "3", "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert _document(out)["cases"][0]["judge_alone"] == 0  # "no" now fails 3 of 3: the agent's own failures


def test_sample_judges_at_most_n_outputs_a_criterion(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                                     tmp_path: Path) -> None:
    report, env, server = judged
    before = server.calls
    out = tmp_path / "trust.json"
    proc = judge_check(tmp_path, env, str(report), "--repeats", "2", "--sample", "1", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert server.calls - before == 2 and _document(out)["criteria"][0]["outputs"] == 1


def test_a_changed_suite_is_said_and_judge_wins(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                                tmp_path: Path) -> None:
    report, env, _ = judged
    suite = tmp_path / "judged.jsonl"
    suite.write_text(suite.read_text().replace('"hi"', '"hello"'))
    proc = judge_check(tmp_path, env, str(report), "--repeats", "2")
    # the changed case's own judge (use) is unknown now, and the report's sweep named no --judge
    assert proc.returncode == 2 and "no judge: pass --judge CONNECTOR" in proc.stderr, proc.stderr
    proc = judge_check(tmp_path, env, str(report), "--repeats", "2", "--judge", "local.llm")
    assert proc.returncode == 0, proc.stderr
    assert "case c: changed in" in proc.stdout and "since the report" in proc.stdout


def test_bad_input_is_exit_2_before_any_call(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                             tmp_path: Path) -> None:
    report, env, server = judged
    before = server.calls
    missing = judge_check(tmp_path, env, str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "nope.json: no such file" in missing.stderr
    unknown = judge_check(tmp_path, env, str(report), "--judge", "no.such")
    assert unknown.returncode == 2 and "no.such" in unknown.stderr, unknown.stderr
    bad_output = judge_check(tmp_path, env, str(report), "-o", str(tmp_path / "x.pdf"))
    assert bad_output.returncode == 2 and "cannot tell the format" in bad_output.stderr
    one = judge_check(tmp_path, env, str(report), "--repeats", "1")
    assert one.returncode == 2
    plain = _document(report)
    plain["results"] = [c for c in plain["results"] if c["id"] == "plain"]
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    nothing = judge_check(tmp_path, env, str(tmp_path / "plain.json"))
    assert nothing.returncode == 2 and "no judged check" in nothing.stderr
    assert server.calls == before
