"""Matrix sweeps (SPEC 22, issue 41): arms of known pass probabilities (``tests/agents/arms.py``),
their verdicts against the baseline arm, the interleaved order of their runs, the arms' own
summaries and fronts, bad arms (exit 2 naming the arm), and each format of the report."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from farm import TestSettings, run_sweep
from farm.errors import InputError
from farm.matrix.arms import MatrixFlags
from farm.matrix.report import pareto
from farm.matrix.schedule import group_runs, interleaved, made_before, round_order
from farm.models import ArmReport, ArmSummary, SweepReport
from farm.plan.fleet import FleetFlags
from farm.stats import exit_code_for
from tests.support.history_fixtures import take_inbox

ARMS = Path(__file__).resolve().parents[1] / "agents" / "arms.py"


def _suite(tmp_path: Path, cases: int = 6) -> Path:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "hi", "expected": "yes"}) + "\n"
                             for i in range(1, cases + 1)))
    return suite


def _arm(name: str, fn: str) -> str:
    return f"{name}={'py:'}{ARMS}:{fn}"


def _sweep(tmp_path: Path, *arms: str, runs: int = 20, cases: int = 6, seed: int = 0, file: str | None = None,
           baseline: str | None = None, **settings: Any) -> SweepReport:
    return run_sweep(TestSettings(input=str(_suite(tmp_path, cases)), runs=runs, cwd=str(tmp_path),
                                  matrix=MatrixFlags(arms, file, baseline, seed), **settings))


def _verdicts(report: SweepReport, arm: str) -> Counter[str]:
    assert report.matrix is not None
    return Counter(cell.verdict for cell in report.matrix.cells if cell.arm == arm)


def test_a_much_worse_arm_is_worse_on_every_case_and_exit_1(tmp_path: Path) -> None:
    report = _sweep(tmp_path, _arm("good", "p95"), _arm("bad", "p20"), runs=20)
    assert report.matrix is not None and report.arms is not None
    assert _verdicts(report, "bad") == Counter({"worse": 6})
    assert _verdicts(report, "good") == Counter({"baseline": 6})
    assert report.matrix.worse == {"good": 0, "bad": 6}
    assert exit_code_for(report) == 1
    assert [r.arm for r in report.results] == ["good", "bad"] * 6  # plan order: case by case, each arm
    assert [r.id for r in report.results][:4] == ["c1", "c1", "c2", "c2"]  # their own ids, beside the arm


def test_a_much_better_arm_is_better_and_the_baseline_flag_moves_the_comparison(tmp_path: Path) -> None:
    report = _sweep(tmp_path, _arm("bad", "p20"), _arm("good", "p95"), runs=20)
    assert _verdicts(report, "good") == Counter({"better": 6})
    turned = _sweep(tmp_path, _arm("bad", "p20"), _arm("good", "p95"), runs=20, baseline="good")
    assert turned.matrix is not None and turned.matrix.baseline == "good"
    assert _verdicts(turned, "bad") == Counter({"worse": 6})


def test_identical_arms_are_not_worse(tmp_path: Path) -> None:
    """Draws seeded by (case, run): these 8 cases hold no false discovery. How often identical arms
    get one (at most the compare's alpha per arm, BH over its cases) is benchmarks/bench_matrix.py's
    figure: with 10 cases, arm two's c10 is a false ``worse`` (q ≤ 0.1), as promised now and then."""
    report = _sweep(tmp_path, _arm("one", "p70"), _arm("two", "p70"), _arm("three", "p70"), runs=20, cases=8)
    assert report.matrix is not None
    assert report.matrix.worse == {"one": 0, "two": 0, "three": 0}
    assert "worse" not in _verdicts(report, "two") | _verdicts(report, "three")
    assert exit_code_for(report) == 1  # p70 misses --min-pass-rate 100%: the usual case verdicts still gate
    assert exit_code_for(_sweep(tmp_path, _arm("one", "p70"), _arm("two", "p70"), runs=20, cases=8,
                                min_pass_rate=0.3)) == 0


def test_each_arm_has_its_summary_and_the_fronts(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text('[[arm]]\nname = "cheap"\nagent = "py:' + str(ARMS) + ':by_option"\n'
                      'options = { p = 0.2, cost = 1 }\n\n'
                      '[[arm]]\nname = "dear"\nagent = "py:' + str(ARMS) + ':by_option"\n'
                      'options = { p = 0.95, cost = 10 }\n\n'
                      '[[arm]]\nname = "worst"\nagent = "py:' + str(ARMS) + ':by_option"\n'
                      'options = { p = 0.2, cost = 20 }\n')
    report = _sweep(tmp_path, runs=10, cases=4, file=str(matrix))
    assert report.arms is not None and report.matrix is not None
    cheap, dear, _ = (arm.summary for arm in report.arms)
    assert (cheap.cases, cheap.runs, cheap.tokens) == (4, 40, 40 * 15)
    assert cheap.cost_usd == pytest.approx(0.04) and dear.cost_usd == pytest.approx(0.4)
    assert cheap.pass_rate < dear.pass_rate and cheap.pass_rate_ci[0] <= cheap.pass_rate <= cheap.pass_rate_ci[1]
    assert cheap.p50_latency_ms is not None and cheap.p95_latency_ms is not None
    assert cheap.p50_latency_ms <= cheap.p95_latency_ms
    assert report.arms[1].options == {"p": 0.95, "cost": 10}
    assert set(report.matrix.pareto_cost) == {"cheap", "dear"}  # worst: as bad as cheap, and dearer
    assert _verdicts(report, "dear") == Counter({"better": 4})


def test_pareto_front_needs_every_cost() -> None:
    def arm(name: str, rate: float, cost: float | None) -> ArmReport:
        return ArmReport(name=name, agent="x", summary=ArmSummary(cases=1, runs=1, passed=0, pass_rate=rate,
                                                                  pass_rate_ci=(0, 100), passed_cases=0,
                                                                  failed_cases=1, cost_usd=cost))

    arms = [arm("a", 90, 2.0), arm("b", 80, 1.0), arm("c", 80, 3.0), arm("d", 90, 2.0)]
    assert pareto(arms, lambda a: a.summary.cost_usd) == ["a", "b", "d"]  # ties stay; c is beaten by a and b
    assert pareto([*arms, arm("e", 99, None)], lambda a: a.summary.cost_usd) == []


def test_runs_are_interleaved_round_by_round_in_the_seeded_order(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("MATRIX_CALL_LOG", str(log))
    arms = ("a", "b", "c")
    _sweep(tmp_path, *(_arm(n, "p70") for n in arms), runs=4, cases=2, seed=7, parallel=1)
    calls = [line.split() for line in log.read_text().splitlines()]
    expected = [[f"c{case}@{arms[i]}", str(run)] for case in (1, 2) for run in range(1, 5)
                for i in round_order(7, case - 1, run, 3)]
    assert calls == expected
    rounds = {tuple(c[0] for c in calls[k:k + 3]) for k in range(0, len(calls), 3)}
    assert len(rounds) > 1  # the order is drawn anew each round, not fixed


def test_interleaving_resumes_from_any_position_and_counts_what_came_before() -> None:
    runs = [3, 5, 2, 4, 4, 1]  # two groups of three arms (a skipped copy may hold fewer runs)
    items = list(range(6))
    whole = list(interleaved(items, runs.__getitem__, 3, seed=5))
    assert len(whole) == sum(runs) and Counter(i for i, _ in whole) == Counter(dict(enumerate(runs)))
    for start in range(len(whole) + 1):
        assert list(interleaved(items, runs.__getitem__, 3, seed=5, start=start)) == whole[start:]
        before = Counter(i for i, _ in whole[:start])
        assert made_before(items, runs.__getitem__, 3, 5, start) == [before[i] for i in items]
    assert list(group_runs([2, 1], 0, 0))[-1] == (0, 2)


@pytest.mark.parametrize(("arms", "problem"), [
    (("solo=py:x.py:f",), "arm 'solo': a matrix needs at least two arms"),
    (("a=py:x.py:f", "a=py:y.py:f"), "arm 'a': named twice"),
    (("bad name=py:x.py:f", "b=py:x.py:f"), "arm name 'bad name'"),
    (("noagent", "b=py:x.py:f"), "--arm 'noagent': expected NAME=AGENT"),
])
def test_bad_arms_are_input_errors_naming_the_arm(tmp_path: Path, arms: tuple[str, ...], problem: str) -> None:
    with pytest.raises(InputError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        _sweep(tmp_path, *arms)


def test_an_arm_whose_agent_does_not_resolve_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="arm 'ghost': "):
        _sweep(tmp_path, _arm("ok", "p95"), "ghost=py:/nowhere/agent.py:respond")


def test_a_bad_matrix_file_names_the_file_the_line_and_the_arm(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(f'# arms\n[[arm]]\nname = "ok"\nagent = "py:{ARMS}:p95"\n\n'
                      '[[arm]]\nname = "hot"\nagent = "py:x.py:f"\noptions = { temperature = "high" }\n')
    with pytest.raises(InputError, match=rf"{matrix}:6: arm 'hot': options.temperature: expected a number"):
        _sweep(tmp_path, file=str(matrix))
    matrix.write_text('[[arm]]\nname = "ok"\nagent = "x"\n[[arm]]\nname = "two"\nagnet = "x"\n')
    with pytest.raises(InputError, match=rf"{matrix}:4: arm 'two': unknown key 'agnet'"):
        _sweep(tmp_path, file=str(matrix))
    matrix.write_text('[[arm]\n')
    with pytest.raises(InputError, match=rf"{matrix}: not valid TOML"):
        _sweep(tmp_path, file=str(matrix))
    with pytest.raises(InputError, match="--baseline-arm nope: no such arm"):
        _sweep(tmp_path, _arm("a", "p95"), _arm("b", "p95"), baseline="nope")
    with pytest.raises(InputError, match="a matrix's arms name the agents"):
        _sweep(tmp_path, _arm("a", "p95"), _arm("b", "p95"), name="py:x.py:f")


def test_arms_replace_the_agent_of_hocon_cases(tmp_path: Path) -> None:
    suite = tmp_path / "hello.hocon"
    suite.write_text('{ "agent": "nonexistent", "connections": ["direct", "http"], "interactions": [ { "text": "hi", '
                     '"response": { "text": { "keywords": "yes" } } } ] }\n')  # arms naming no server: run once
    report = run_sweep(TestSettings(input=str(suite), runs=10, cwd=str(tmp_path),
                                    matrix=MatrixFlags((_arm("good", "p95"), _arm("bad", "p20")))))
    assert report.arms is not None and [a.summary.runs for a in report.arms] == [10, 10]
    assert [(r.id, r.arm) for r in report.results] == [("hello", "good"), ("hello", "bad")]
    assert report.arms[0].summary.pass_rate > report.arms[1].summary.pass_rate


def test_every_format_shows_the_arms(tmp_path: Path, farm_cli: Any, sqlite_history_url: str) -> None:
    outputs = [str(tmp_path / f"r.{ext}") for ext in ("json", "md", "xml", "html", "jsonl")]
    done = farm_cli.run("test", "-i", str(_suite(tmp_path, 3)), "--arm", _arm("good", "p95"), "--arm",
                        _arm("bad", "p20"), "--runs", "10", "--no-progress", "--history", sqlite_history_url,
                        *(x for o in outputs for x in ("-o", o)), local=True)
    assert done.returncode == 1, done.stderr
    assert "good (baseline)" in done.stderr and "bad worse on 3" in done.stderr
    document = json.loads(Path(outputs[0]).read_text())
    assert [a["name"] for a in document["arms"]] == ["good", "bad"]
    assert {r["arm"] for r in document["results"]} == {"good", "bad"}
    assert "## Matrix" in Path(outputs[1]).read_text()
    lines = [json.loads(line) for line in Path(outputs[4]).read_text().splitlines()]
    assert Counter((e["id"], e["arm"]) for e in lines if e["type"] == "result") == {
        (f"c{i}", arm): 10 for i in (1, 2, 3) for arm in ("good", "bad")}  # each run: its case's own id and arm
    suites = ET.parse(outputs[2]).getroot().findall("testsuite")
    assert [s.get("name").rsplit(" ", 1)[-1] for s in suites] == ["[good]", "[bad]"]  # one suite per arm
    agents = [{p.get("name"): p.get("value") for p in s.iter("property")}["agent_id"] for s in suites]
    assert agents == [f"py:{ARMS}:p95", f"py:{ARMS}:p20"]
    page = Path(outputs[3]).read_text()
    assert 'class="chart matrix-scatter"' in page and 'data-arm="bad"' in page and "(baseline)" in page
    sweep_id = document["metadata"]["sweep_id"]
    take_inbox(sqlite_history_url)
    with sqlite3.connect(sqlite_history_url.removeprefix("sqlite:///")) as db:
        recorded = sorted(row[0] for row in db.execute("select sweep_id from farm_sweeps"))
    assert recorded == [f"{sweep_id}:bad", f"{sweep_id}:good"]
    compared = farm_cli.run("compare", f"{sweep_id}:good", f"{sweep_id}:bad", "--history", sqlite_history_url,
                            local=True)
    assert compared.returncode == 1 and "3 regressed" in compared.stdout, compared.stdout + compared.stderr
    trend = farm_cli.run("history", "--tag", "arm=bad", "--history", sqlite_history_url, "--json", local=True)
    assert trend.returncode == 0, trend.stderr
    assert [s["sweep_id"] for s in json.loads(trend.stdout)["sweeps"]] == [f"{sweep_id}:bad"]
    from farm.view.data import ViewData

    page = ViewData(sqlite_history_url).sweep(f"{sweep_id}:bad")  # farm view: the whole matrix on one page
    assert page is not None and page.report_html is not None and 'id="matrix"' in page.report_html
    from_file = farm_cli.run("compare", f"{outputs[0]}:good", f"{outputs[0]}:bad", local=True)
    assert from_file.returncode == 1 and "3 regressed" in from_file.stdout, from_file.stdout + from_file.stderr
    whole = farm_cli.run("compare", outputs[0], f"{outputs[0]}:bad", local=True)
    assert whole.returncode == 2 and "a matrix report: name an arm" in whole.stderr, whole.stderr


def test_cli_bad_arm_exits_2(tmp_path: Path, farm_cli: Any) -> None:
    done = farm_cli.run("test", "-i", str(_suite(tmp_path, 1)), "--arm", "a=py:x.py:f", "--no-progress",
                        "--no-history", local=True)
    assert done.returncode == 2 and "arm 'a'" in done.stderr, done.stderr


def test_a_prompt_agents_arms_ask_their_own_model_and_temperature(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from tests.support.servers import ROOT, openai_server

    project = tmp_path / "prompt"
    shutil.copytree(ROOT / "examples" / "prompt", project)
    (project / "m.toml").write_text('[[arm]]\nname = "cold"\nagent = "keywords"\n'
                                    'options = { model = "alpha", temperature = 0.2 }\n'
                                    '[[arm]]\nname = "hot"\nagent = "keywords"\n'
                                    'options = { model = "beta", temperature = 0.9 }\n')
    with openai_server() as served:
        monkeypatch.setenv("EXAMPLE_LLM_HOST", f"{served.url}/v1")
        monkeypatch.setenv("EXAMPLE_LLM_KEY", "sk-test")
        report = run_sweep(TestSettings(input=str(project / "assistants" / "keywords" / "tests" / "inputs.jsonl"),
                                        runs=2, cwd=str(project), matrix=MatrixFlags(file="m.toml")))
        asked = Counter((r["body"]["model"], r["body"].get("temperature")) for r in served.server.requests)
    cases = len(report.results) // 2
    assert asked == {("alpha", 0.2): 2 * cases, ("beta", 0.9): 2 * cases}
    served_models = {(r.arm, model) for r in report.results for model in (r.served.models if r.served else {})}
    assert served_models == {("cold", "alpha"), ("hot", "beta")}


def test_record_and_replay_keep_each_arm_apart(tmp_path: Path) -> None:
    arms = (_arm("one", "p70"), _arm("two", "p70"))
    recorded = _sweep(tmp_path, *arms, runs=3, cases=2, fleet=FleetFlags(record=str(tmp_path / "rec")))
    assert len(list((tmp_path / "rec").rglob("*.json"))) == 2 * 2 * 3  # cases × arms × runs: none shared
    replayed = _sweep(tmp_path, *arms, runs=3, cases=2, fleet=FleetFlags(replay=str(tmp_path / "rec")))
    assert [(r.id, r.arm, r.passed) for r in replayed.results] == [(r.id, r.arm, r.passed) for r in recorded.results]


def test_an_arms_judge_verdicts_are_its_own() -> None:
    from farm.fleet.judge_cache import ARM_SCOPE, verdict_key

    plain = verdict_key("judge", "is polite", "hi", "hello")
    token = ARM_SCOPE.set("manifest:/a@|{\"temperature\":0.2}")
    try:
        cold = verdict_key("judge", "is polite", "hi", "hello")
    finally:
        ARM_SCOPE.reset(token)
    token = ARM_SCOPE.set("manifest:/a@|{\"temperature\":0.9}")
    try:
        hot = verdict_key("judge", "is polite", "hi", "hello")
    finally:
        ARM_SCOPE.reset(token)
    assert len({plain, cold, hot}) == 3
    assert verdict_key("judge", "is polite", "hi", "hello") == plain  # outside a matrix: the keys as before


def test_cli_baseline_with_arms_exits_2(tmp_path: Path, farm_cli: Any) -> None:
    done = farm_cli.run("test", "-i", str(_suite(tmp_path, 1)), "--arm", _arm("a", "p95"), "--arm", _arm("b", "p95"),
                        "--baseline", "main", "--no-progress", local=True)
    assert done.returncode == 2 and "farm compare REF MATRIX:ARM" in done.stderr, done.stderr
    nightly = farm_cli.run("test", "-i", str(_suite(tmp_path, 1)), "--arm", _arm("a", "p95"), "--arm",
                           _arm("b", "p95"), "--tag", "trigger=nightly", "--no-progress", local=True)
    assert nightly.returncode == 2 and "nightly" in nightly.stderr, nightly.stderr


def test_each_arm_is_held_to_the_overall_gate_on_its_own_runs(tmp_path: Path) -> None:
    """p70 then p95: no arm is worse than the baseline and every case passes --min-pass-rate 30%, and
    the sweep's runs pass about 82% (≥ 80%); the p70 arm's own runs do not: exit 1."""
    report = _sweep(tmp_path, _arm("mid", "p70"), _arm("good", "p95"), runs=20, cases=6, min_pass_rate=0.3,
                    min_overall_pass_rate=0.8)
    assert report.matrix is not None and not any(report.matrix.worse.values())
    assert report.summary.overall_pass_rate >= 80 and report.arms is not None
    assert report.arms[0].summary.pass_rate < 80 <= report.arms[1].summary.pass_rate
    assert exit_code_for(report) == 1
    from farm.matrix.text import front_lines

    assert any(line.startswith("arm mid: pass rate ") and "below --min-overall-pass-rate 80%" in line
               for line in front_lines(report))
    relaxed = _sweep(tmp_path, _arm("mid", "p70"), _arm("good", "p95"), runs=20, cases=6, min_pass_rate=0.3,
                     min_overall_pass_rate=0.6)
    assert exit_code_for(relaxed) == 0


def test_failing_first_keeps_a_cases_arms_side_by_side() -> None:
    from farm.history.session import failing_first

    ids = [f"c{i}@{arm}" for i in (1, 2, 3) for arm in ("a", "b")]
    order = failing_first(ids, {"c3": 0, "c2": 4}, arms=("a", "b"))
    assert [ids[i] for i in order] == ["c3@a", "c3@b", "c2@a", "c2@b", "c1@a", "c1@b"]
    assert failing_first(["x@y", "c1"], {"x@y": 0}) == [0, 1]  # outside a matrix an id is only itself


def test_the_verdicts_take_compares_alpha_and_min_drop(tmp_path: Path) -> None:
    arms = (_arm("good", "p95"), _arm("mid", "p70"))

    def sweep(**thresholds: float) -> SweepReport:
        return run_sweep(TestSettings(input=str(_suite(tmp_path, 4)), runs=20, cwd=str(tmp_path),
                                      matrix=MatrixFlags(arms, **thresholds)))  # type: ignore[arg-type]

    usual, lenient = sweep(), sweep(min_drop=60.0)
    assert lenient.matrix is not None and (lenient.matrix.alpha, lenient.matrix.min_drop) == (0.1, 60.0)
    assert "worse" in _verdicts(usual, "mid") and "worse" not in _verdicts(lenient, "mid")
    with pytest.raises(InputError, match=r"--alpha 0\.7"):
        sweep(alpha=0.7)
