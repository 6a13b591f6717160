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
from tests.support.fleet_project import COIN, farm_env, run_farm, write_connector, write_prices, write_suite
from tests.support.scripted_judge import CALL_USD, ScriptedJudge, scripted_judge
from tests.support.servers import Served

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
    proc = run_farm(tmp_path, "-i", "judged.jsonl", "-n", COIN, "--runs", str(RUNS), "-o", str(out),
                    env=farm_env(tmp_path, FARM_PRICES=str(write_prices(tmp_path))))
    assert proc.returncode == 1, proc.stderr
    return out


def judge_check(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``farm judge-check ARGS`` (recorded in no history unless ``--history`` is given)."""
    history = [] if "--history" in args else ["--no-history"]
    return subprocess.run([sys.executable, "-m", "farm", "judge-check", *history, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


def farm_history(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "farm", "history", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


def _document(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_every_distinct_judged_output_is_judged_k_times_again(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                                              tmp_path: Path) -> None:
    report, env, server = judged
    before = server.calls
    assert before == 2  # the sweep: one verdict per distinct output, the rest from the judge cache
    out = tmp_path / "trust.json"
    proc = judge_check(tmp_path, env, str(report), "--repeats", "3", "-o", str(out), "-o", str(tmp_path / "t.md"),
                       "-o", str(tmp_path / "t.html"))
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
    page = (tmp_path / "t.html").read_text()
    assert "<td>says yes</td>" in page and "<script" not in page and "no judge-noisy criterion" in page
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


def test_a_journal_gives_every_run_past_the_report_s_details(tmp_path: Path) -> None:
    """The report keeps 100 runs' details a case; the sweep's journal (by its id) keeps them all."""
    agent = tmp_path / "counting.py"
    agent.write_text("def respond(messages, context):\n    return f'answer {context.run}'\n")
    with scripted_judge(lambda output, n, m: m != 1) as (served, server):
        write_connector(tmp_path, served.url)
        write_suite(tmp_path, "many.jsonl", [{"id": "many", "input": "hi", "assert": {"type": "agent", "value": "ok"}}])
        env = farm_env(tmp_path, FARM_DATA_DIR=str(tmp_path / "data"))
        report = tmp_path / "report.json"
        swept = run_farm(tmp_path, "-i", "many.jsonl", "-n", f"py:{agent}:respond", "--runs", "120", "--judge",
                         "local.llm", "-o", str(report), env=env)
        assert swept.returncode == 0, swept.stderr
        sweep_id = _document(report)["metadata"]["sweep_id"]
        out = tmp_path / "trust.json"
        before = server.calls
        by_report = judge_check(tmp_path, env, str(report), "--repeats", "2", "-o", str(out))
        assert by_report.returncode == 0, by_report.stderr
        assert _document(out)["criteria"][0]["outputs"] == 100 and server.calls - before == 200
        by_id = judge_check(tmp_path, env, sweep_id, "--repeats", "2", "-o", str(out))
        assert by_id.returncode == 0, by_id.stderr
    [criterion] = _document(out)["criteria"]
    assert (criterion["outputs"], criterion["flipped"]) == (120, 20)  # the 20 outputs the report's 100 left out
    missing = judge_check(tmp_path, env, "20000101T000000-abcdef")
    assert missing.returncode == 2 and "the history keeps no outputs" in missing.stderr


def test_estimate_says_the_calls_and_cost_and_asks_nothing(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                                           tmp_path: Path) -> None:
    report, env, server = judged
    before = server.calls
    proc = judge_check(tmp_path, env, str(report), "--repeats", "3", "--estimate")
    assert proc.returncode == 0, proc.stderr
    assert f"2 outputs to judge, 3 verdicts each: 6 judge calls, about ${6 * CALL_USD:.4g}" in proc.stdout
    assert server.calls == before


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
    assert missing.returncode == 2 and "nope.json: no such report or journal" in missing.stderr
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


# ------------------------------------------------------------------------------------ the history


def test_each_check_is_recorded_and_farm_history_trends_the_flip_rate(
        judged: tuple[Path, dict[str, str], ScriptedJudge], tmp_path: Path, history_url: str) -> None:
    """Two checks of the same report: "no" flips in the first (2 of 3 pass) and not in the second
    (0 of 3): the criterion's flip rate goes 50 % → 0 % in ``farm history``, on SQLite and PostgreSQL."""
    report, env, _ = judged
    for _ in range(2):
        proc = judge_check(tmp_path, env, str(report), "--repeats", "3", "--history", history_url)
        assert proc.returncode == 0, proc.stderr
        assert "judge check recorded in the history" in proc.stderr and "(1 criteria)" in proc.stderr
    shown = farm_history(tmp_path, env, "--history", history_url, "--json")
    assert shown.returncode == 0, shown.stderr
    [criterion] = json.loads(shown.stdout)["judge_checks"]
    assert {k: criterion[k] for k in ("case", "criterion_id", "turn", "check", "criterion")} == {
        "case": "c", "criterion_id": "1.1", "turn": 1, "check": "agent", "criterion": "says yes"}
    points = criterion["points"]
    assert [(p["outputs"], p["flipped"], p["judge_flip_rate"], p["judge_noisy"], p["repeats"]) for p in points] == [
        (2, 1, 0.5, False, 3), (2, 0, 0.0, False, 3)]
    assert points[0]["sweep_id"] == _document(report)["metadata"]["sweep_id"] and points[0]["judge"] == "local.llm"
    assert points[0]["checked_at"] <= points[1]["checked_at"]
    text = farm_history(tmp_path, env, "--history", history_url)
    assert text.returncode == 0, text.stderr
    assert "c: agent says yes: judge flip rate 50% → 0% (2 checks, newest 3 verdicts × 2 outputs)" in text.stdout
    only = farm_history(tmp_path, env, "--history", history_url, "--case", "other", "--json")
    assert only.returncode == 0 and json.loads(only.stdout)["judge_checks"] == []


def test_an_estimate_or_no_history_records_nothing(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                                   tmp_path: Path, sqlite_history_url: str) -> None:
    report, env, _ = judged
    estimate = judge_check(tmp_path, env, str(report), "--estimate", "--history", sqlite_history_url)
    off = judge_check(tmp_path, env, str(report), "--repeats", "2", "--history", sqlite_history_url, "--no-history")
    assert estimate.returncode == off.returncode == 0, (estimate.stderr, off.stderr)
    assert "recorded" not in estimate.stderr + off.stderr
    shown = farm_history(tmp_path, env, "--history", sqlite_history_url, "--json")
    assert json.loads(shown.stdout)["judge_checks"] == []


# ------------------------------------------------------------------------------------ --labels


def _write_labels(path: Path, labels: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(label) + "\n" for label in labels))
    return path


def test_labels_give_tpr_tnr_and_refuse_a_correction_on_few_labels(
        judged: tuple[Path, dict[str, str], ScriptedJudge], tmp_path: Path) -> None:
    report, env, _ = judged
    human = ["pass" if out == "yes" else "fail" for out in OUTPUTS]
    wrong = OUTPUTS.index("no")
    human[wrong] = "pass"  # the humans think the judge wrongly failed this "no"
    labels = _write_labels(tmp_path / "labels.jsonl", [
        {"case": "c", "run": run, "criterion": "says yes", "human": verdict} for run, verdict in enumerate(human, 1)])
    out = tmp_path / "trust.json"
    proc = judge_check(tmp_path, env, str(report), "--repeats", "2", "--labels", str(labels), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    [row] = _document(out)["labels"]
    yes, no = OUTPUTS.count("yes"), OUTPUTS.count("no")
    assert (row["human_passed"], row["human_failed"]) == (yes + 1, no - 1)
    assert row["tpr"] == pytest.approx(yes / (yes + 1)) and row["tnr"] == 1.0
    assert row["raw_pass_rate"] == pytest.approx(yes / RUNS)
    assert row["corrected_pass_rate"] is None and row["refused"].startswith("fewer than 20 labels")
    assert "the judge against human labels" in proc.stdout and "none: fewer than 20 labels" in proc.stdout


def test_labels_with_enough_verdicts_correct_the_pass_rate(tmp_path: Path) -> None:
    runs = 60
    outputs = ["yes" if coin("c", run) < 0.5 else "no" for run in range(1, runs + 1)]
    with scripted_judge(lambda output, n, m: output == "yes") as (served, _):
        report = tmp_path / "report.json"
        write_connector(tmp_path, served.url)
        write_suite(tmp_path, "judged.jsonl", [{"id": "c", "input": "hi", "metadata": {"p": 0.5},
                                                "assert": {"type": "agent", "value": "says yes"}}])
        env = farm_env(tmp_path)
        proc = run_farm(tmp_path, "-i", "judged.jsonl", "-n", COIN, "--runs", str(runs), "--judge", "local.llm",
                        "-o", str(report), env=env)
        assert proc.returncode == 1, proc.stderr
        # humans agree with the judge but for 3 "no" runs they would pass: TPR < 1, TNR = 1
        human = ["pass" if out == "yes" else "fail" for out in outputs]
        for index in [i for i, out in enumerate(outputs) if out == "no"][:3]:
            human[index] = "pass"
        assert min(human.count("pass"), human.count("fail")) >= 20
        labels = _write_labels(tmp_path / "labels.jsonl",
                               [{"case": "c", "run": run, "human": h} for run, h in enumerate(human, 1)])
        out = tmp_path / "trust.json"
        checked = judge_check(tmp_path, env, str(report), "--repeats", "2", "--labels", str(labels), "-o", str(out))
    assert checked.returncode == 0, checked.stderr
    [row] = _document(out)["labels"]
    tpr, tnr = row["tpr"], row["tnr"]
    raw = outputs.count("yes") / runs
    assert tnr == 1.0 and tpr == pytest.approx(outputs.count("yes") / human.count("pass"))
    assert row["refused"] is None
    assert row["corrected_pass_rate"] == pytest.approx((raw + tnr - 1) / (tpr + tnr - 1))
    assert row["corrected_pass_rate"] > raw  # a judge that misses passes under-reports them
    low, high = row["corrected_pass_rate_ci"]
    assert low < row["corrected_pass_rate"] < high


@pytest.mark.parametrize(("label", "problem"), [
    ({"case": "c", "run": 99, "human": "pass"}, "no stored judged output of case 'c', run 99"),
    ({"case": "c", "output": "maybe", "human": "pass"}, "no stored judged output of case 'c', that output"),
    ({"case": "c", "run": 1, "criterion": "other", "human": "pass"}, "for criterion 'other'"),
    ({"case": "c", "run": 1, "human": "yes"}, '"human" must be "pass" or "fail"'),
    ({"case": "c", "human": "pass"}, 'give "run" or "output"'),
])
def test_a_label_naming_no_stored_output_is_exit_2_with_its_line(judged: tuple[Path, dict[str, str], ScriptedJudge],
                                                                 tmp_path: Path, label: dict[str, Any],
                                                                 problem: str) -> None:
    report, env, server = judged
    before = server.calls
    labels = _write_labels(tmp_path / "labels.jsonl", [{"case": "c", "output": "no", "human": "fail"}, label])
    proc = judge_check(tmp_path, env, str(report), "--labels", str(labels))
    assert proc.returncode == 2 and "labels.jsonl:2: " in proc.stderr and problem in proc.stderr, proc.stderr
    assert server.calls == before  # nothing asked
