"""No false green (SPEC 10), through the real CLI: bad input exits 2 and never calls the agent.

A mistyped path is not a message; a suite that runs nothing is not a pass; a report that cannot
be written is found before the first agent call; a flag given twice is not "last one wins";
gates on the pass rate read ``0.95`` and ``95%`` alike and mean what they say.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.api import TestSettings, prepare_sweep
from farm.cli import main
from farm.defaults import DEFAULT_PARALLEL
from tests.support.servers import ROOT

AGENTS = ROOT / "tests" / "agents" / "basic.py"
ECHO = f"py:{AGENTS}:echo"


def farm(*args: str, cwd: Path | None = None, calls: Path | None = None):
    env = {"FARM_TEST_CALLS": str(calls)} if calls else None
    old = Path.cwd()
    os.chdir(cwd or old)
    try:
        return CliRunner().invoke(main, ["test", "--no-progress", *args], env=env, catch_exceptions=False)
    finally:
        os.chdir(old)


def write_suite(path: Path, *cases: dict) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


# --------------------------------------------------------------------------- what -i names


@pytest.mark.parametrize("given", ["tests/inptus.jsonl", "suite.jsonl", "cases.json", "smoke.hocon", "./smoke",
                                   "~/no-such-farm-suite", "dir/sub"])
def test_a_mistyped_path_exits_2_and_never_reaches_the_agent(tmp_path: Path, given: str) -> None:
    calls = tmp_path / "calls.txt"
    result = farm("-i", given, "-n", ECHO, cwd=tmp_path, calls=calls)
    assert result.exit_code == 2, result.output
    assert f"{given}: no such file or directory" in result.stderr and "-m" in result.stderr
    assert not calls.exists()


def test_an_existing_file_with_the_wrong_extension_exits_2(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    wrong = tmp_path / "cases.json"
    wrong.write_text('[{"id": "a", "input": "x"}]')
    result = farm("-i", str(wrong), "-n", ECHO, calls=calls)
    assert result.exit_code == 2 and "not a suite file" in result.stderr
    assert not calls.exists()


def test_message_mode_is_explicit_with_m_and_a_bare_word_stays_a_message(tmp_path: Path) -> None:
    explicit = farm("-m", "what is 1/2 of cases.json?", "-n", f"py:{AGENTS}:text", cwd=tmp_path)
    assert explicit.exit_code == 0 and explicit.stdout.strip() == "you said: what is 1/2 of cases.json?"
    bare = farm("-i", "hello there", "-n", f"py:{AGENTS}:text", cwd=tmp_path)  # Yao: not a path, a message
    assert bare.exit_code == 0 and bare.stdout.strip() == "you said: hello there"


@pytest.mark.parametrize("args", [[], ["-i", "s.jsonl", "-m", "hi"]])
def test_exactly_one_of_input_and_message(tmp_path: Path, args: list[str]) -> None:
    result = farm(*args, "-n", ECHO, cwd=tmp_path)
    assert result.exit_code == 2 and "-i PATH" in result.stderr and "-m MESSAGE" in result.stderr


def test_a_suite_that_runs_nothing_exits_2(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    skipped = write_suite(tmp_path / "skipped.jsonl", {"id": "a", "input": "x", "skip": True},
                          {"id": "b", "input": "y", "skip": True})
    result = farm("-i", str(skipped), "-n", ECHO, calls=calls)
    assert result.exit_code == 2 and "no runnable cases: all 2 cases are skipped" in result.stderr
    comments = tmp_path / "empty.jsonl"
    comments.write_text("// nothing yet\n\n")
    assert farm("-i", str(comments), "-n", ECHO, calls=calls).exit_code == 2
    mixed = write_suite(tmp_path / "mixed.jsonl", {"id": "run-me", "input": "x"},
                        {"id": "skip-me", "input": "y", "skip": True})
    result = farm("-i", str(mixed), "-n", ECHO, "-k", "skip", calls=calls)
    assert result.exit_code == 2 and "matching -k 'skip' is skipped" in result.stderr
    assert not calls.exists()


# --------------------------------------------------------------------------- outputs and flags


@pytest.mark.parametrize("output", ["/proc/farm-cannot-create.json", "missing/dir/r.json", "DIR"])
def test_an_unwritable_output_exits_2_before_the_agent_is_called(tmp_path: Path, output: str) -> None:
    calls = tmp_path / "calls.txt"
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    if output == "DIR":
        output = str(tmp_path)
    good = tmp_path / "good.json"
    result = farm("-i", str(suite), "-n", ECHO, "-o", str(good), "-o", output, calls=calls)
    assert result.exit_code == 2, result.output
    assert output in result.stderr and ("cannot be written" in result.stderr or "director" in result.stderr)
    assert not calls.exists() and not good.exists()


def test_three_formats_from_one_sweep(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"}, {"id": "b", "input": "y"})
    outs = [tmp_path / "report.html", tmp_path / "junit.xml", tmp_path / "summary.md", tmp_path / "r.json"]
    result = farm("-i", str(suite), "-n", ECHO, "--runs", "3", *(a for o in outs for a in ("-o", str(o))),
                  calls=calls)
    assert result.exit_code == 0, result.output
    assert len(calls.read_text().splitlines()) == 6  # one sweep, not one per format
    sweep_id = json.loads(outs[3].read_text())["metadata"]["sweep_id"]
    assert sweep_id in outs[0].read_text() and sweep_id in outs[2].read_text()
    junit = ET.parse(outs[1]).getroot()
    assert junit.find("testsuite/properties/property[@name='sweep_id']").attrib["value"] == sweep_id
    for out in outs:
        assert f"report: {out}" in result.stderr


def test_the_same_output_twice_exits_2(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    result = farm("-i", str(suite), "-n", ECHO, "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 2 and "given twice" in result.stderr


@pytest.mark.parametrize("flags", [["--runs", "2", "--runs", "3"], ["--runs=2", "--runs", "3"],
                                   ["-n", ECHO, "-n", ECHO], ["--timeout", "1s", "--timeout", "2s"],
                                   ["--min-pass-rate", "0.5", "--min-pass-rate", "90%"]])
def test_a_single_valued_flag_given_twice_exits_2(tmp_path: Path, flags: list[str]) -> None:
    calls = tmp_path / "calls.txt"
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    result = farm("-i", str(suite), *(["-n", ECHO] if "-n" not in flags else []), *flags, calls=calls)
    assert result.exit_code == 2, result.output
    assert "given 2 times" in result.output
    assert not calls.exists()


def test_k_repeats_and_matches_substrings_or_globs(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", *({"id": i, "input": "x"} for i in
                                                ("login-ok", "login-bad", "billing-1", "billing-22", "search")))
    out = tmp_path / "o.json"
    assert farm("-i", str(suite), "-n", ECHO, "-k", "login", "-k", "billing-?", "-o", str(out)).exit_code == 0
    assert [r["id"] for r in json.loads(out.read_text())["results"]] == ["login-ok", "login-bad", "billing-1"]


# --------------------------------------------------------------------------- gates and defaults


def test_min_pass_rate_reads_a_fraction_or_a_percentage(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "f", "input": "x", "expected": "yes"})
    base = ["-i", str(suite), "-n", f"py:{AGENTS}:flaky", "--runs", "4"]
    assert farm(*base, "--min-pass-rate", "0.5").exit_code == 0
    assert farm(*base, "--min-pass-rate", "50%").exit_code == 0
    assert farm(*base, "--min-pass-rate", "75%").exit_code == 1
    wrong = farm(*base, "--min-pass-rate", "95")
    assert wrong.exit_code == 2 and "did you mean 95%?" in wrong.output


def test_min_overall_pass_rate_gates_the_whole_suite_run_weighted(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "f", "input": "x", "expected": "yes"},
                        {"id": "g", "input": "y", "expected": "yes"})
    base = ["-i", str(suite), "-n", f"py:{AGENTS}:flaky", "--runs", "4", "--min-pass-rate", "50%"]
    assert farm(*base).exit_code == 0  # each case meets 50 %
    assert farm(*base, "--min-overall-pass-rate", "0.5").exit_code == 0  # 4 of 8 runs: exactly 50 %
    below = farm(*base, "--min-overall-pass-rate", "50.1%")
    assert below.exit_code == 1
    assert "overall pass rate 50.0% is below --min-overall-pass-rate 50.1%" in below.stderr


def test_parallel_defaults_to_8_in_process(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s.jsonl", {"id": "a", "input": "x"})
    assert DEFAULT_PARALLEL == 8 == TestSettings().parallel
    assert prepare_sweep(TestSettings(input=str(suite), name=ECHO)).plan.parallel == 8
    help_text = " ".join(CliRunner().invoke(main, ["test", "--help"]).output.split())
    assert re.search(r"--parallel INTEGER Runs in flight at once \(in-process\)\. \[default: 8\]", help_text)


def test_help_carries_the_exit_codes_and_renders_no_raw_markup() -> None:
    text = CliRunner().invoke(main, ["test", "--help"]).output
    for line in ("2    bad input or configuration", "130  interrupted by Ctrl-C (143: by SIGTERM)",
                 "3    runtime error", "5    stopped: the provider's quota", "4    stopped by a budget",
                 "1    some case failed", "0    every case passed"):
        assert line in text, line
    assert text.index("130  interrupted") < text.index("3    runtime") < text.index("1    some case")
    for command in [[], *([name] for name in main.commands)]:
        shown = CliRunner().invoke(main, [*command, "--help"]).output
        assert "``" not in shown and ":class:" not in shown and ":func:" not in shown, command
