"""Judge-noisy criteria on the scorecard and in ``farm compare`` (SPEC 23, issue 42 item 4).

A criterion's ``judge_flip_rate``/``judge_noisy`` come from the newest ``farm judge-check`` recorded
in the history for it, else from the sweep's own ``--confirm-failures`` votes. A scripted
OpenAI-compatible judge decides every verdict, so which criterion is judge-noisy is known.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from farm.history.judge_checks import judge_check_trends, mark_judge_noise, record_judge_check
from farm.history.store import HistoryStore
from farm.judgecheck.run import CriterionTrust, JudgeCheck
from farm.models import Assertion, Case, CheckOutcome, Message, RunResult, RunStatus, SweepReport, Turn
from farm.models.criteria import CriterionStats
from farm.reports.criteria import criterion_row
from farm.stats import CaseAccumulator, plan_case
from farm.stats.compare_criteria import CriterionCount, move_text, moved_criteria
from farm.stats.judge_trust import flip_counts
from tests.support.browser_fixtures import case_stats, run, sweep_report
from tests.support.fleet_project import farm_env, report_of, write_connector, write_suite
from tests.support.scripted_judge import scripted_judge

# ------------------------------------------------------------------------------- the votes, in process


def _accumulated(votes: Sequence[list[str] | None]) -> Any:
    check = Assertion(type="agent", value="says yes", has_value=True)
    case = Case(id="c", format="neuro-san", turns=[Turn(messages=[Message(role="user", content="hi")],
                                                        assertions=[check])])
    acc = CaseAccumulator(case, plan_case(case, len(votes), 1.0))
    for number, vote in enumerate(votes, start=1):
        passed = vote is None or 2 * vote.count("pass") > len(vote)
        acc.add(RunResult(case_id="c", run=number, status=RunStatus.PASSED if passed else RunStatus.FAILED,
                          turns_completed=1, checks=[CheckOutcome(name="agent", passed=passed, turn=1,
                                                                  verdict="pass" if passed else "fail",
                                                                  judge_votes=vote)]))
    [criterion] = acc.stats().criteria
    return criterion


def test_the_sweep_s_votes_give_the_flip_rate_and_mark_a_noisy_judge() -> None:
    split, same = ["fail", "pass", "pass"], ["fail", "fail", "fail"]
    noisy = _accumulated([split] * 6 + [same] * 2 + [None] * 4)  # 6 of 8 voted runs disagree
    assert (noisy.judge_flip_rate, noisy.judge_noisy, noisy.judge_flips_from) == (0.75, True, "votes")
    assert flip_counts(8, 6).judge_noisy and noisy.label == "flaky"
    assert noisy.label + " (judge-noisy: flip rate 75%)" == criterion_row(noisy)[-1]
    quiet = _accumulated([split] + [same] * 9)  # 1 of 10: its interval reaches below 5 %
    assert (quiet.judge_flip_rate, quiet.judge_noisy) == (0.1, False)
    assert criterion_row(quiet)[-1] == quiet.label and "judge-noisy" not in criterion_row(quiet)[-1]
    unknown = _accumulated([None] * 3)
    assert (unknown.judge_flip_rate, unknown.judge_noisy, unknown.judge_flips_from) == (None, None, None)


def test_a_drop_of_a_judge_noisy_criterion_says_so_on_either_side() -> None:
    def count(passed: int, noisy: bool | None) -> CriterionCount:
        return CriterionCount(id="1.1", criterion="agent says yes", runs=10, passed=passed,
                              label="stable" if passed == 10 else "flaky", judge_noisy=noisy)

    for base_noisy, head_noisy in ((True, None), (None, True), (False, True)):
        [move] = moved_criteria([count(10, base_noisy)], [count(5, head_noisy)], 10.0)
        assert move.judge_noisy and "judge-noisy: the judge may explain it" in move_text(move)
    [plain] = moved_criteria([count(10, False)], [count(5, None)], 10.0)
    assert not plain.judge_noisy and "judge" not in move_text(plain)
    [rise] = moved_criteria([count(5, True)], [count(10, True)], 10.0)
    assert "judge-noisy" not in move_text(rise)  # an improvement needs no excuse


# --------------------------------------------------------------------- the history, the CLI, a scripted judge

RUNS = 20
AGENT = "def respond(messages, context):\n    return f'answer {context.run}'\n"


def _farm(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "farm", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=240)


def _sweep(cwd: Path, env: dict[str, str], out: Path, *history: str) -> dict[str, Any]:
    proc = _farm(cwd, env, "test", "--no-progress", "-i", "judged.jsonl", "-n", f"py:{cwd / 'agent.py'}:respond",
                 "--runs", str(RUNS), "--parallel", "4", "--judge", "local.llm", "-o", str(out),
                 "-o", str(out.with_suffix(".md")), *history)
    assert proc.returncode in (0, 1), proc.stderr
    (out.with_suffix(".out")).write_text(proc.stdout + proc.stderr)
    return report_of(out)


def test_a_recorded_judge_check_marks_the_scorecard_and_compare_notes_it(tmp_path: Path,
                                                                         sqlite_history_url: str) -> None:
    """Sweep A (every output passes) is judge-checked by a judge that flips every output: the
    criterion is judge-noisy. Sweep B fails half its outputs: its scorecard, with the history,
    marks the criterion; ``farm compare`` notes the judge on the side that knows it."""
    phase = {"now": "a"}

    def decide(output: str, n: int, m: int) -> bool:
        if phase["now"] == "check":
            return m % 2 == 1  # each output: fail, pass, fail… (its first verdict came in sweep A)
        return phase["now"] == "a" or int(output.split()[-1]) % 2 == 0

    (tmp_path / "agent.py").write_text(AGENT)
    history = ("--history", sqlite_history_url)
    with scripted_judge(decide) as (served, _):
        write_connector(tmp_path, served.url)
        write_suite(tmp_path, "judged.jsonl", [{"id": "c", "input": "hi", "assert": {"type": "agent",
                                                                                     "value": "says yes"}}])
        env = farm_env(tmp_path, FARM_DATA_DIR=str(tmp_path / "data"))
        a = _sweep(tmp_path, env, tmp_path / "a.json", *history)
        assert a["results"][0]["criteria"][0]["judge_noisy"] is None  # nothing known yet
        phase["now"] = "check"
        checked = _farm(tmp_path, env, "judge-check", str(tmp_path / "a.json"), "--repeats", "2", *history)
        assert checked.returncode == 0 and "1 of 1 criteria judge-noisy" in checked.stdout, checked.stderr
        phase["now"] = "b"
        b_alone = _sweep(tmp_path, env, tmp_path / "b1.json", "--no-history")
        b = _sweep(tmp_path, env, tmp_path / "b2.json", *history)
    assert b_alone["results"][0]["criteria"][0]["judge_noisy"] is None  # no history read: not known
    [criterion] = b["results"][0]["criteria"]
    assert (criterion["passed"], criterion["runs"]) == (RUNS // 2, RUNS)
    assert (criterion["judge_flip_rate"], criterion["judge_noisy"], criterion["judge_flips_from"]) == (
        1.0, True, "judge-check")
    assert "flaky (judge-noisy: flip rate 100%)" in (tmp_path / "b2.md").read_text()
    assert "c: 1 of 1 criteria failing: agent says yes 10/20 (judge-noisy: flip rate 100%)" in (
        tmp_path / "b2.out").read_text()  # the terminal's summary, as failing_text words it
    note = "judge-noisy: the judge may explain it (farm judge-check)"
    base_side = _farm(tmp_path, env, "compare", a["metadata"]["sweep_id"], str(tmp_path / "b1.json"), *history,
                      "-o", str(tmp_path / "cmp.json"))
    assert base_side.returncode == 1 and note in base_side.stdout, base_side.stdout + base_side.stderr
    [row] = [r for r in json.loads((tmp_path / "cmp.json").read_text())["cases"] if r["id"] == "c"]
    assert row["criteria_moved"][0]["judge_noisy"] is True
    head_side = _farm(tmp_path, env, "compare", str(tmp_path / "a.json"), "last", *history)
    assert head_side.returncode == 1 and note in head_side.stdout, head_side.stdout + head_side.stderr
    neither = _farm(tmp_path, env, "compare", str(tmp_path / "a.json"), str(tmp_path / "b1.json"))
    assert neither.returncode == 1 and "criterion moved" in neither.stdout and note not in neither.stdout


# ------------------------------------------------------------------- the store, SQLite and PostgreSQL


def _scorecard(passed: int, **judge: Any) -> CriterionStats:
    return CriterionStats(id="1.1", criterion="agent says yes", kind="agent", turn=1, runs=10, passed=passed,
                          pass_rate=10.0 * passed, pass_rate_ci=(0.0, 100.0),
                          label="stable" if passed == 10 else "flaky", **judge)


def _report(sweep_id: str, started: str, criterion: CriterionStats) -> SweepReport:
    runs = [run(n, "passed" if n <= criterion.passed else "failed") for n in range(1, 11)]
    return sweep_report([case_stats("c", runs, criteria=[criterion])], sweep_id=sweep_id, started_at=started,
                        completed_at=started)


def test_the_store_keeps_the_marks_and_a_later_check_of_a_sweep_marks_it(history_url: str) -> None:
    store = HistoryStore.open(history_url)
    try:
        a = store.record(_report("s-a", "2026-11-01T00:00:00Z", _scorecard(10)))
        store.record(_report("s-b", "2026-11-02T00:00:00Z", _scorecard(5, judge_flip_rate=0.6, judge_noisy=True,
                                                                        judge_flips_from="votes")))
        [info_a] = [i for i in store.sweeps() if i.pk == a.pk]
        info_b = store.latest()
        assert info_b is not None
        before = store.snapshot(info_a).cases[0].criteria[0]
        assert before.judge_noisy is None and store.snapshot(info_b).cases[0].criteria[0].judge_noisy is True
        found = JudgeCheck("a.json", "s-a", 5, None)
        found.criteria.append(CriterionTrust("c", 1, "agent", "says yes", "local.llm", flip_counts(50, 20), "1.1"))
        assert record_judge_check(store.engine, found) == 1
        assert store.snapshot(info_a).cases[0].criteria[0].judge_noisy is True  # the check of sweep A marks it
        fresh = _report("s-c", "2026-11-03T00:00:00Z", _scorecard(7))
        assert mark_judge_noise(store.engine, fresh) == 1
        marked = fresh.results[0].criteria[0]
        assert (marked.judge_flip_rate, marked.judge_noisy, marked.judge_flips_from) == (0.4, True, "judge-check")
        other = _report("s-d", "2026-11-04T00:00:00Z", _scorecard(7))
        other.results[0].id = "elsewhere"
        assert mark_judge_noise(store.engine, other) == 0 and other.results[0].criteria[0].judge_noisy is None
        [(key, (criterion_id, points))] = judge_check_trends(store.engine).items()
        assert key == ("c", 1, "agent", "says yes") and criterion_id == "1.1"
        assert [(p.sweep_id, p.outputs, p.flipped, p.judge_flip_rate) for p in points] == [("s-a", 50, 20, 0.4)]
    finally:
        store.close()
