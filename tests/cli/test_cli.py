"""``farm test`` end to end on real temporary suites, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.cli import main

REPO = Path(__file__).resolve().parents[2]
AGENTS = REPO / "tests" / "agents" / "basic.py"


def agent(name: str) -> str:
    return f"py:{AGENTS}:{name}"


def write_suite(path: Path, *cases: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [c if isinstance(c, str) else json.dumps(c) for c in cases]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def farm(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    runner = CliRunner()
    old = Path.cwd()
    if cwd:
        os.chdir(cwd)
    try:
        return runner.invoke(main, ["test", "--no-progress", *args], env=env, catch_exceptions=False)
    finally:
        os.chdir(old)


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_passing_suite_exits_0_and_streams_jsonl(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "hi", "assert": {"type": "json_path",
                                                                                    "path": "$.echo", "value": "hi"}})
    out = tmp_path / "out.jsonl"
    result = farm("-i", str(suite), "-n", agent("echo"), "-o", str(out), "--runs", "3")
    assert result.exit_code == 0, result.output
    kinds = [e["type"] for e in events(out)]
    assert kinds == ["start", "result", "result", "result", "stability", "summary"]
    stability = events(out)[4]
    assert stability["pass_rate"] == 100.0 and stability["stability_class"] == "stable"


def test_failing_case_exits_1(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "hi", "assert": {"type": "contains",
                                                                                    "value": "nope"}})
    result = farm("-i", str(suite), "-n", agent("echo"), "-o", str(tmp_path / "o.json"))
    assert result.exit_code == 1
    report = json.loads((tmp_path / "o.json").read_text())
    assert report["results"][0]["passed"] == 0
    assert "nope" in json.dumps(report["results"][0]["run_details"][0]["failed_checks"])


def test_default_output_path_is_next_to_the_input(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "tests" / "inputs.jsonl", {"id": "a", "input": "hi"})
    result = farm("-i", str(suite), "-n", agent("echo"))
    assert result.exit_code == 0, result.output
    outputs = list((tmp_path / "tests").glob("output-*.jsonl"))
    assert len(outputs) == 1
    assert len(outputs[0].stem) == len("output-") + 14 and outputs[0].stem[7:].isdigit()


def test_user_and_team_priority(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "s.jsonl",
        {"id": "default", "input": "x"},
        {"id": "own", "input": "x", "user": "admin", "team": "ops"},
        {"id": "user-only", "input": "x", "user": "special"},
    )
    out = tmp_path / "o.json"
    assert farm("-i", str(suite), "-n", agent("echo"), "-o", str(out)).exit_code == 0
    got = {r["id"]: r["run_details"][0]["output"] for r in json.loads(out.read_text())["results"]}
    assert (got["default"]["user"], got["default"]["team"]) == ("test-user", "test-team")
    assert (got["own"]["user"], got["own"]["team"]) == ("admin", "ops")
    assert (got["user-only"]["user"], got["user-only"]["team"]) == ("special", "test-team")
    assert farm("-i", str(suite), "-n", agent("echo"), "-o", str(out), "-u", "ci", "-t", "ci-team").exit_code == 0
    got = {r["id"]: r["run_details"][0]["output"] for r in json.loads(out.read_text())["results"]}
    assert {(o["user"], o["team"]) for o in got.values()} == {("ci", "ci-team")}


def test_direct_message_mode_prints_the_output(tmp_path: Path) -> None:
    result = farm("-i", "hello there", "-n", agent("text"), cwd=tmp_path)
    assert result.exit_code == 0
    assert result.stdout.strip() == "you said: hello there"
    assert not list(tmp_path.iterdir())  # nothing written without -o


def test_walk_up_finds_package_yao(tmp_path: Path) -> None:
    agent_dir = tmp_path / "assistants" / "workers" / "system" / "kw"
    (agent_dir / "tests").mkdir(parents=True)
    (agent_dir / "package.yao").write_text('// comment\n{"type": "python", "entry": "impl.py:run"}')
    (agent_dir / "impl.py").write_text("def run(messages, context):\n    return 'walked ' + context.case_id\n")
    suite = write_suite(agent_dir / "tests" / "inputs.jsonl", {"id": "w", "input": "x", "expected": "walked w"})
    assert farm("-i", str(suite), "-o", str(tmp_path / "o.json")).exit_code == 0
    # the same agent by id under the agents root, with dots as folders
    env = {"FARM_AGENTS_ROOT": str(tmp_path / "assistants")}
    other = write_suite(tmp_path / "elsewhere" / "s.jsonl", {"id": "w", "input": "x", "expected": "walked w"})
    assert farm("-i", str(other), "-n", "workers.system.kw", "-o", str(tmp_path / "o.json"), env=env).exit_code == 0


def test_no_agent_found_is_input_error(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    result = farm("-i", str(suite))
    assert result.exit_code == 2
    assert "package.yao" in result.stderr and "-n" in result.stderr


def test_unknown_agent_id_is_input_error(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    result = farm("-i", str(suite), "-n", "nosuch.agent", env={"FARM_AGENTS_ROOT": str(tmp_path)})
    assert result.exit_code == 2 and "nosuch.agent" in result.stderr


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": "a", "input": "x", "assert": {"type": "contians", "value": "x"}}', ":2: assert.type:"),
        ('{"id": "a", "input": "x", "assert": {"type": "regex", "value": "(unclosed"}}', ":2: assert.value:"),
        ('{"id": "a", "input": "x", "assert": {"type": "json_path", "path": "$..[", "value": 1}}', ":2: assert.path:"),
        ('{"id": "a", "input": "x", "assert": "contains"}', ":2: assert:"),
        ('{"id": "a", "input": "x", "assert": {"type": "contains"}}', ":2: assert.value:"),
        ('{"id": "a", "input": "x", "timeout": "soon"}', ":2: timeout:"),
        ('{"id": "a", "input": 42}', ":2: input:"),
        ("{not json", ":2:"),
    ],
)
def test_bad_input_exits_2_and_runs_nothing(tmp_path: Path, line: str, expected: str) -> None:
    calls = tmp_path / "calls.txt"
    suite = tmp_path / "s.jsonl"
    suite.write_text('// first line is a comment\n' + line + "\n")
    result = farm("-i", str(suite), "-n", agent("echo"), env={"FARM_TEST_CALLS": str(calls)})
    assert result.exit_code == 2, result.output
    assert f"{suite}{expected}" in result.stderr
    assert not calls.exists()


def test_every_bad_line_is_reported_and_nothing_runs(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    suite = write_suite(
        tmp_path / "s.jsonl",
        {"id": "good", "input": "x"},
        {"id": "a", "input": "x", "assert": {"type": "nope", "value": 1}},
        {"id": "good", "input": "dup"},
    )
    result = farm("-i", str(suite), "-n", agent("echo"), env={"FARM_TEST_CALLS": str(calls)})
    assert result.exit_code == 2
    assert f"{suite}:2:" in result.stderr and f"{suite}:3:" in result.stderr
    assert not calls.exists()


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--runs", "0"], "--runs"),
        (["--parallel", "0"], "--parallel"),
        (["--timeout", "fast"], "--timeout"),
        (["--min-pass-rate", "1.5"], "--min-pass-rate"),
        (["-o", "report.pdf"], ".pdf"),
        (["--detach"], "--broker"),
    ],
)
def test_bad_flags_exit_2(tmp_path: Path, flags: list[str], needle: str) -> None:
    calls = tmp_path / "calls.txt"
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    result = farm("-i", str(suite), "-n", agent("echo"), *flags, env={"FARM_TEST_CALLS": str(calls)}, cwd=tmp_path)
    assert result.exit_code == 2, result.output
    assert needle in result.output + result.stderr
    assert not calls.exists()


def test_pattern_selects_cases(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "smoke-1", "input": "x"}, {"id": "deep-1", "input": "x"},
                        {"id": "smoke-2", "input": "x"})
    out = tmp_path / "o.json"
    assert farm("-i", str(suite), "-n", agent("echo"), "-k", "smoke-*", "-o", str(out)).exit_code == 0
    assert [r["id"] for r in json.loads(out.read_text())["results"]] == ["smoke-1", "smoke-2"]
    assert farm("-i", str(suite), "-n", agent("echo"), "-k", "none*").exit_code == 2


def test_fail_fast_stops_scheduling(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    cases = [{"id": f"c{i}", "input": "x", "assert": {"type": "contains", "value": "absent"}} for i in range(5)]
    suite = write_suite(tmp_path / "s.jsonl", *cases)
    out = tmp_path / "o.json"
    result = farm("-i", str(suite), "-n", agent("echo"), "--fail-fast", "--runs", "3", "-o", str(out),
                  "--parallel", "1", env={"FARM_TEST_CALLS": str(calls)})
    assert result.exit_code == 1
    assert len(calls.read_text().splitlines()) < 15
    report = json.loads(out.read_text())
    assert [r["id"] for r in report["results"]] == ["c0"]
    assert report["metadata"]["stopped"] == "fail-fast"
    assert report["metadata"]["not_run"] == ["c1", "c2", "c3", "c4"]
    assert "stopped early (fail-fast): 4 cases not run" in result.stderr


def test_parallel_overlaps_slow_sync_agents(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", *({"id": f"c{i}", "input": "x"} for i in range(8)))

    def most_at_once(parallel: str) -> int:
        """The most calls in flight together: overlap itself, not a ratio of wall times (which a
        busy machine's fixed costs move)."""
        spans_file = tmp_path / f"spans-{parallel}.txt"
        assert farm("-i", str(suite), "-n", agent("slow_spans"), "--parallel", parallel,
                    "-o", str(tmp_path / "o.json"), env={"FARM_TEST_SPANS": str(spans_file)}).exit_code == 0
        spans = [tuple(map(float, line.split())) for line in spans_file.read_text().splitlines()]
        assert len(spans) == 8
        return max(sum(1 for start, end in spans if start <= at < end) for at, _ in spans)

    assert most_at_once("1") == 1
    assert most_at_once("8") >= 4  # eight 0.3 s calls begun together; a busy machine may begin a few late


def test_hung_agent_is_cut_off_by_its_timeout(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "h", "input": "x", "timeout": "1s"})
    out = tmp_path / "o.jsonl"
    start = time.perf_counter()
    result = farm("-i", str(suite), "-n", agent("hang"), "-o", str(out))
    elapsed = time.perf_counter() - start
    assert result.exit_code == 1
    run = next(e for e in events(out) if e["type"] == "result")
    assert run["status"] == "timeout" and "1s" in run["error"]
    assert elapsed < 60  # the agent sleeps 120 s: it was not waited for


def test_crashing_agent_is_an_error_run_not_a_crash(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "boom", "input": "x"}, {"id": "fine", "input": "x"})
    out = tmp_path / "o.jsonl"
    assert farm("-i", str(suite), "-n", agent("crash"), "-o", str(out), "--runs", "2").exit_code == 1
    results = [e for e in events(out) if e["type"] == "result"]
    assert len(results) == 4 and {r["status"] for r in results} == {"error"}
    assert "agent exploded" in results[0]["error"]


def test_min_pass_rate_decides_the_verdict(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "f", "input": "x", "expected": "yes"})
    args = ["-i", str(suite), "-n", agent("flaky"), "--runs", "4", "-o", str(tmp_path / "o.json")]
    assert farm(*args).exit_code == 1
    assert farm(*args, "--min-pass-rate", "0.5").exit_code == 0
    report = json.loads((tmp_path / "o.json").read_text())
    assert report["results"][0]["label"] == "flaky" and report["results"][0]["pass_rate"] == 50.0


@pytest.mark.parametrize(("ext", "probe"), [(".md", "# Agent Test Report"), (".json", '"summary"'),
                                            (".xml", "<testsuite")])
def test_output_format_follows_extension(tmp_path: Path, ext: str, probe: str) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    out = tmp_path / f"report{ext}"
    assert farm("-i", str(suite), "-n", agent("echo"), "-o", str(out)).exit_code == 0
    assert probe in out.read_text()


def test_builtin_reporter_writes_whatever_the_extension(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    out = tmp_path / "summary.txt"
    assert farm("-i", str(suite), "-n", agent("echo"), "-r", "report.summary", "-o", str(out)).exit_code == 0
    assert "1" in out.read_text() and out.read_text().strip()


def test_reporter_agent_receives_the_report(tmp_path: Path) -> None:
    reporter = tmp_path / "rep.py"
    reporter.write_text(
        "import json\n"
        "def render(messages, context):\n"
        "    data = json.loads(messages[-1]['content'])\n"
        "    return f\"{data['format']}: {data['report']['summary']['total_cases']} cases\"\n"
    )
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"}, {"id": "b", "input": "y"})
    out = tmp_path / "r.md"
    result = farm("-i", str(suite), "-n", agent("echo"), "-r", f"py:{reporter}:render", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text() == "markdown: 2 cases"


def test_multi_turn_hocon_example_passes() -> None:
    out_dir = REPO / "examples" / "multiturn" / "tests"
    result = farm("-i", str(out_dir), "-o", str(Path(os.environ.get("TMPDIR", "/tmp")) / "mt.json"))
    assert result.exit_code == 0, result.output + result.stderr


def test_readme_first_command_in_a_subprocess(tmp_path: Path) -> None:
    """The README's first command, through the installed console script, from the repo root."""
    out = tmp_path / "out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "farm", "test", "-i", "examples/keyword/tests/inputs.jsonl", "--runs", "5",
         "-o", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    summary = events(out)[-1]
    assert summary["type"] == "summary" and summary["total_runs"] == 35
    assert "7 passed" in proc.stderr


def test_help_explains_flags() -> None:
    result = CliRunner().invoke(main, ["test", "--help"])
    assert result.exit_code == 0
    for flag in ("--input", "--runs", "--parallel", "--broker", "--min-pass-rate", "--neuro-san-compat", "-k"):
        assert flag in result.output
    assert "Examples:" in result.output


def test_flaky_example_shows_every_stability_class(tmp_path: Path) -> None:
    out = tmp_path / "flaky.json"
    result = farm("-i", str(REPO / "examples" / "flaky" / "tests" / "inputs.jsonl"), "--runs", "20",
                  "--parallel", "4", "-o", str(out))
    assert result.exit_code == 1
    got = {r["id"]: (r["stability_class"], r["label"], r["pass_rate"]) for r in json.loads(out.read_text())["results"]}
    assert got == {
        "stable": ("stable", "stable", 100.0),
        "mostly-stable": ("mostly_stable", "flaky", 90.0),
        "unstable": ("unstable", "flaky", 60.0),
        "highly-unstable": ("highly_unstable", "flaky", 20.0),
        "broken": ("broken", "broken", 0.0),
    }


def test_missing_judge_is_input_error_before_any_run(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    suite = write_suite(tmp_path / "s.jsonl", {"id": "j", "input": "x", "assert": {"type": "agent", "value": "polite"}})
    result = farm("-i", str(suite), "-n", agent("echo"), env={"FARM_TEST_CALLS": str(calls)})
    assert result.exit_code == 2
    assert f"{suite}:1: judge (default)" in result.stderr and "--judge" in result.stderr
    assert not calls.exists()
    result = farm("-i", str(suite), "-n", agent("echo"), "--judge", "no.such", env={"FARM_TEST_CALLS": str(calls)},
                  cwd=tmp_path)
    assert result.exit_code == 2 and "no.such" in result.stderr and not calls.exists()


def test_bad_manifest_is_input_error_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "package.yao").write_text('{"type": "carrier-pigeon"}')
    suite = write_suite(tmp_path / "tests" / "inputs.jsonl", {"id": "a", "input": "x"})
    result = farm("-i", str(suite))
    assert result.exit_code == 2 and "carrier-pigeon" in result.stderr
    assert not list((tmp_path / "tests").glob("output-*"))


def test_output_may_not_overwrite_the_suite(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    before = suite.read_text()
    result = farm("-i", str(suite), "-n", agent("echo"), "-o", str(suite))
    assert result.exit_code == 2 and "input" in result.stderr
    assert suite.read_text() == before


def test_reporter_without_output(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    assert farm("-i", str(suite), "-n", agent("echo"), "-r", "report.html").exit_code == 0
    assert len(list(tmp_path.glob("output-*.html"))) == 1
    result = farm("-i", str(suite), "-n", agent("echo"), "-r", f"py:{AGENTS}:text")
    assert result.exit_code == 2 and "needs -o" in result.stderr


def test_default_output_paths_never_collide(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    for _ in range(3):
        assert farm("-i", str(suite), "-n", agent("echo")).exit_code == 0
    assert len(list(tmp_path.glob("output-*.jsonl"))) == 3


@pytest.mark.parametrize(("name", "needle"), [("http://", "no host"), ("py:agent.py", "py:module:function"),
                                              ("neuro-san://host", "neuro-san://host:port/agent")])
def test_malformed_agent_references_exit_2(tmp_path: Path, name: str, needle: str) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    result = farm("-i", str(suite), "-n", name)
    assert result.exit_code == 2 and needle in result.stderr


def test_verbose_prints_failing_runs(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "f", "input": "x", "expected": "yes"})
    result = farm("-i", str(suite), "-n", agent("flaky"), "--runs", "2", "-v", "-o", str(tmp_path / "o.json"))
    assert result.exit_code == 1
    assert "1 run failed: equals: expected 'yes'" in result.stderr
    assert "e.g. f run 2 (failed)" in result.stderr and "run 1" not in result.stderr


def test_neuro_san_compat_flips_less_and_greater(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def run(messages):\n    return {'count': 5}\n")
    (tmp_path / "package.yao").write_text('{"type": "python", "entry": "agent.py:run"}')
    (tmp_path / "c.hocon").write_text(
        'interactions: [{text: "hi", response: {structure: {count: {less: 10, greater: 1}}}}]\n')
    out = tmp_path / "o.json"
    assert farm("-i", str(tmp_path / "c.hocon"), "-o", str(out)).exit_code == 0
    assert json.loads(out.read_text())["metadata"]["comparison"] == "documented"
    assert farm("-i", str(tmp_path / "c.hocon"), "-o", str(out), "--neuro-san-compat").exit_code == 1
    assert json.loads(out.read_text())["metadata"]["comparison"] == "neuro-san-compat"
