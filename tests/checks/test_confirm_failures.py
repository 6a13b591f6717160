"""``farm test --confirm-failures k`` (SPEC 23): a judged failure is judged k times, the majority stands.

In process with scripted ``Judge`` objects (the rule), then the real CLI in a subprocess against a
scripted OpenAI-compatible judge whose verdicts follow a seeded schedule (the cache, the cost,
record/replay).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.checks import evaluate_turn
from farm.checks.base import JUDGE_REPEAT, CheckContext, Judge, JudgeVerdict
from farm.checks.spec import parse_assertions, parse_response
from farm.fleet.judge_cache import CachedJudge, MemoryVerdictCache
from farm.models import CheckOutcome, Reply, Turn
from farm.reports.fleet import cost_text
from tests.support.fleet_project import (
    COIN,
    KEY,
    farm_env,
    report_of,
    run_farm,
    write_connector,
    write_prices,
    write_suite,
)
from tests.support.scripted_judge import CALL_USD, ScriptedJudge, scripted_judge
from tests.support.servers import Served

# ------------------------------------------------------------------------------ the rule, in process


class Scripted:
    """A judge answering from a list of verdicts, in order; it notes each call's ``JUDGE_REPEAT``."""

    def __init__(self, *verdicts: str) -> None:
        self.verdicts = list(verdicts)
        self.repeats: list[int] = []

    async def judge(self, *, criterion: str, actual: Any, input: Any) -> JudgeVerdict:
        self.repeats.append(JUDGE_REPEAT.get())
        return JudgeVerdict(self.verdicts.pop(0), f"call {len(self.repeats)}")  # type: ignore[arg-type]


def _check(spec: dict[str, Any], judge: Judge, k: int, *, stock: bool = False) -> CheckOutcome:
    stock_tests, issues = parse_response({"text": spec}, "response") if stock else ([], [])
    assertions, more = ([], []) if stock else parse_assertions(spec)
    assert not issues and not more, (issues, more)
    turn = Turn(messages=[], stock_tests=stock_tests, assertions=assertions)
    ctx = CheckContext(judges=lambda use: judge, confirm_failures=k)
    return asyncio.run(evaluate_turn(turn, Reply(text="out"), ctx, 1))[0]


def test_a_failure_the_majority_passes_passes_with_its_votes() -> None:
    judge = Scripted("fail", "pass", "pass")
    outcome = _check({"type": "agent", "value": "good"}, judge, 3)
    assert outcome.passed and outcome.verdict == "pass" and outcome.judge_votes == ["fail", "pass", "pass"]
    assert judge.repeats == [0, 1, 2]  # the repeats are marked: no cache answers them


def test_a_failure_the_majority_confirms_fails_with_its_votes() -> None:
    outcome = _check({"type": "agent", "value": "good"}, Scripted("fail", "pass", "fail", "equivocal", "pass"), 5)
    assert not outcome.passed and outcome.verdict == "fail"
    assert outcome.judge_votes == ["fail", "pass", "fail", "equivocal", "pass"]  # 2 of 5 pass: no majority


def test_a_pass_or_k_1_is_asked_once_and_carries_no_votes() -> None:
    judge = Scripted("pass")
    outcome = _check({"type": "agent", "value": "good"}, judge, 3)
    assert outcome.passed and outcome.judge_votes is None and judge.repeats == [0]
    once = Scripted("fail")
    assert not _check({"type": "agent", "value": "good"}, once, 1).passed and once.repeats == [0]


def test_a_negated_agent_check_and_not_gist_confirm_a_pass_verdict() -> None:
    negated = _check({"type": "agent", "value": "bad", "negate": True}, Scripted("pass", "fail", "fail"), 3)
    assert negated.passed and negated.judge_votes == ["pass", "fail", "fail"]
    not_gist = _check({"not_gist": "rude"}, Scripted("pass", "fail", "fail"), 3, stock=True)
    assert not_gist.passed and not_gist.judge_votes == ["pass", "fail", "fail"]
    gist = _check({"gist": "polite"}, Scripted("fail", "fail", "pass"), 3, stock=True)
    assert not gist.passed and gist.judge_votes == ["fail", "fail", "pass"]


def test_a_judge_that_cannot_be_asked_is_not_asked_again() -> None:
    judge = Scripted("error")
    assert not _check({"type": "agent", "value": "good"}, judge, 5).passed and judge.repeats == [0]


def test_the_judge_cache_never_answers_a_repeat() -> None:
    inner = Scripted("fail", "pass", "pass", "fail", "pass")
    cached = CachedJudge(inner, "j", MemoryVerdictCache())
    first = _check({"type": "agent", "value": "good"}, cached, 3)
    again = _check({"type": "agent", "value": "good"}, cached, 3)  # same output: the first ask is cached
    assert first.judge_votes == ["fail", "pass", "pass"] and again.judge_votes == ["fail", "fail", "pass"]
    assert inner.repeats == [0, 1, 2, 1, 2]


# --------------------------------------------------------------------- the CLI, a scripted HTTP judge

_COINS = random.Random(1)
SCHEDULE = [False] + [_COINS.random() < 0.5 for _ in range(200)]
"""The first verdict fails (and is cached); the repeats are coins of a seeded generator."""


@pytest.fixture
def judge_server() -> Iterator[tuple[Served, ScriptedJudge]]:
    with scripted_judge(lambda output, n, m: SCHEDULE[n]) as found:
        yield found


def _project(tmp_path: Path, judge: Served) -> tuple[Path, dict[str, str]]:
    write_connector(tmp_path, judge.url)
    check = {"type": "agent", "value": "says yes", "use": "local.llm"}
    suite = write_suite(tmp_path, "judged.jsonl", [{"id": "c", "input": "hi", "metadata": {"p": 1.0}, "assert": check}])
    return suite, farm_env(tmp_path, FARM_PRICES=str(write_prices(tmp_path)))


def _expected(runs: int, k: int) -> list[list[str]]:
    """Each run's votes: the cached first verdict (fail), then k − 1 fresh ones off the schedule."""
    fresh = iter(SCHEDULE[1:])
    return [["fail"] + ["pass" if next(fresh) else "fail" for _ in range(k - 1)] for _ in range(runs)]


def _votes(report: dict[str, Any]) -> list[list[str]]:
    details = sorted(report["results"][0]["run_details"], key=lambda d: d["run"])
    return [(d["judged_checks"] + d["failed_checks"])[0]["judge_votes"] for d in details]


def test_each_judged_failure_is_judged_k_times_past_the_cache_and_paid_for(
        tmp_path: Path, judge_server: tuple[Served, ScriptedJudge]) -> None:
    served, server = judge_server
    suite, env = _project(tmp_path, served)
    out = tmp_path / "report.json"
    runs, k = 6, 3
    proc = run_farm(tmp_path, "-i", str(suite), "-n", COIN, "--runs", str(runs), "--parallel", "1",
                    "--confirm-failures", str(k), "-o", str(out), env=env)
    expected = _expected(runs, k)
    assert server.calls == 1 + runs * (k - 1)  # one first verdict (then cached), every repeat asked
    case = report_of(out)["results"][0]
    assert _votes(report_of(out)) == expected
    assert case["passed"] == sum(v.count("pass") * 2 > k for v in expected)
    assert 0 < case["passed"] < runs and proc.returncode == 1, proc.stderr  # the seed gives both outcomes
    assert case["judge_usage"]["input_tokens"] == 100 * server.calls
    assert case["judge_cost_usd"] == pytest.approx(CALL_USD * server.calls)
    [criterion] = case["criteria"]  # the scorecard's flip rate: runs whose votes disagree, of those voted
    assert criterion["judge_flip_rate"] == pytest.approx(sum(len(set(v)) > 1 for v in expected) / runs)
    assert criterion["judge_flips_from"] == "votes" and isinstance(criterion["judge_noisy"], bool)


def test_repeats_are_recorded_apart_and_replayed_as_they_were(
        tmp_path: Path, judge_server: tuple[Served, ScriptedJudge]) -> None:
    served, server = judge_server
    suite, env = _project(tmp_path, served)
    record, recorded, replayed = tmp_path / "calls", tmp_path / "recorded.json", tmp_path / "replayed.json"
    args = ["-i", str(suite), "-n", COIN, "--runs", "4", "--parallel", "1", "--confirm-failures", "3"]
    first = run_farm(tmp_path, *args, "--record", str(record), "-o", str(recorded), env=env)
    assert first.returncode in (0, 1), first.stderr
    calls = server.calls
    assert len(list((record / "judge").rglob("*.json"))) == 4 * 3  # each run's first ask and its two repeats
    second = run_farm(tmp_path, *args, "--replay", str(record), "-o", str(replayed), env=env)
    assert second.returncode == first.returncode, second.stderr
    assert server.calls == calls  # replayed: no judge call
    assert _votes(report_of(replayed)) == _votes(report_of(recorded)) == _expected(4, 3)


@pytest.mark.parametrize("k", ["2", "0", "-1"])
def test_an_even_or_non_positive_k_is_exit_2_before_any_call(
        tmp_path: Path, judge_server: tuple[Served, ScriptedJudge], k: str) -> None:
    served, server = judge_server
    suite, env = _project(tmp_path, served)
    proc = run_farm(tmp_path, "-i", str(suite), "-n", COIN, "--confirm-failures", k, env=env)
    assert proc.returncode == 2 and "--confirm-failures" in proc.stderr and "odd" in proc.stderr, proc.stderr
    assert server.calls == 0


@pytest.mark.redis
@pytest.mark.slow
def test_workers_confirm_failures_too(tmp_path: Path, redis_client: Any, farm_worker: Any, farm_cli: Any,
                                      counting_agent: Any) -> None:
    """The sweep's K reaches real ``farm worker`` processes: every run's cached failure is confirmed
    by two fresh verdicts that pass it (the judge cache, in Redis, answers no repeat)."""
    farm_worker(queue="confirm", concurrency=4, env={"FARM_TEST_OPENAI_KEY": KEY})
    with scripted_judge(lambda output, n, m: m > 0) as (served, server):
        suite, env = _project(tmp_path, served)
        out = tmp_path / "report.json"
        agent = counting_agent("tests/agents/coin.py:respond")
        done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "4", "--confirm-failures", "3",
                            "--broker", farm_cli.broker, "--queue", "confirm", "--no-history", "--no-progress",
                            "-o", str(out), env={k: env[k] for k in ("FARM_AGENTS_ROOT", "FARM_CONNECTORS_ROOT",
                                                                     "FARM_TEST_OPENAI_KEY")}, timeout=180)
        assert done.returncode == 0, done.stderr
        assert server.calls == 1 + 4 * 2  # one first verdict (single flight, then the cache), two repeats a run
        agent.assert_once_each(4)  # confirming a failure asks the judge again, never the agent
    case = report_of(out)["results"][0]
    assert case["passed"] == 4 and _votes(report_of(out)) == [["fail", "pass", "pass"]] * 4


def _figure(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if line.strip().startswith(f"{name}:")).split(":", 1)[1]


def test_the_estimate_counts_the_repeats_and_the_report_keeps_k(tmp_path: Path) -> None:
    """A judge that fails everything: each run's judged check is asked K = 3 times. The estimate's
    probe asks the first verdict only (one call), then says 5 runs × 3 judge calls, 10 of them
    repeats, and their cost; the sweep's real repeats are those 10, within the estimate."""
    with scripted_judge(lambda output, n, m: False) as (served, server):
        suite, env = _project(tmp_path, served)
        args = ["-i", str(suite), "-n", COIN, "--runs", "5", "--parallel", "1", "--confirm-failures", "3"]
        estimate = run_farm(tmp_path, *args, "--estimate", env=env)
        assert estimate.returncode == 0, estimate.stderr
        assert server.calls == 1  # the probe: one run's first verdict, no repeat
        calls = _figure(estimate.stdout, "calls")
        assert "0 judge" not in calls and "15 judge" in calls, estimate.stdout
        assert "10 of them --confirm-failures repeats" in calls
        cost = _figure(estimate.stdout, "cost").strip()
        assert cost == (f"{cost_text(15 * CALL_USD)} (of which at most {cost_text(10 * CALL_USD)} for the "
                        "--confirm-failures repeats)"), cost
        out = tmp_path / "report.json"
        swept = run_farm(tmp_path, *args, "-o", str(out), env=env)
        assert swept.returncode == 1, swept.stderr
    report = report_of(out)
    assert report["metadata"]["settings"]["confirm_failures"] == 3
    repeats = server.calls - 1 - len({"yes", "no"} & {coin_output for coin_output in _outputs(report)})
    assert repeats == 5 * 2  # the estimate's 10 repeats, all asked: every first verdict failed


def _outputs(report: dict[str, Any]) -> list[str]:
    return [(d["judged_checks"] + d["failed_checks"])[0]["actual"] for d in report["results"][0]["run_details"]]
