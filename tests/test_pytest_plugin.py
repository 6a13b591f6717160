"""The pytest plugin, run as users run it: ``pytest --farm-suite …`` in a subprocess on a project.

The agent is deterministic: ``steady`` always passes, ``coin`` passes on even runs only (exactly
50 % of 10 runs). ``-p no:farm -p farm.pytest_plugin`` loads this checkout's plugin whether or
not the installed package already declares the entry point.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import ROOT

AGENT = '''
def respond(messages, context):
    text = messages[-1]["content"]
    if text == "coin" and context.run % 2:
        return "tails"
    return "heads"
'''
SUITE = (
    '{"id": "steady", "input": "steady", "assert": {"type": "contains", "value": "heads"}}\n'
    '{"id": "coin", "input": "coin", "assert": {"type": "contains", "value": "heads"}}\n'
)
ORDINARY = "def test_ordinary():\n    assert 1 + 1 == 2\n"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "s.jsonl").write_text(SUITE)
    (tmp_path / "test_plain.py").write_text(ORDINARY)
    return tmp_path


def run_pytest(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FARM_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:farm", "-p", "farm.pytest_plugin", "-o", "addopts=",
         "--rootdir", str(project), *args],
        cwd=project, capture_output=True, text=True, timeout=600,
        env=clean | {"PYTHONPATH": str(ROOT)} | (env or {}),
    )


FARM_ARGS = ("--farm-suite", "s.jsonl", "--farm-agent", "py:agent.py:respond", "--farm-runs", "10")


def test_stable_passes_flaky_fails_with_its_pass_rate_and_junit(project: Path) -> None:
    done = run_pytest(project, *FARM_ARGS, "s.jsonl", "--junitxml", "junit.xml")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 failed, 1 passed" in out
    assert "s.jsonl::coin FAILED" in out or "FAILED s.jsonl::coin" in out
    assert "pass rate 50.0% (5/10 runs passed, 10 needed)" in out
    assert "95% CI" in out and "most common failure (5× of 10 runs)" in out
    cases = {c.get("name"): c for c in ET.parse(project / "junit.xml").getroot().iter("testcase")}
    assert set(cases) == {"steady", "coin"}
    failure = cases["coin"].find("failure")
    assert failure is not None and "50.0%" in (failure.get("message", "") + (failure.text or ""))
    assert cases["steady"].find("failure") is None


def test_k_runs_only_the_selected_case(project: Path) -> None:
    done = run_pytest(project, *FARM_ARGS, "s.jsonl", "-k", "steady", "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "s.jsonl::steady PASSED" in done.stdout
    assert "1 passed, 1 deselected" in done.stdout


def test_beside_ordinary_tests_and_from_pyproject(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.farm]\nsuites = ["s.jsonl"]\n')
    done = run_pytest(project, "--farm-agent", "py:agent.py:respond", "--farm-runs", "4", "-v")
    assert "test_plain.py::test_ordinary PASSED" in done.stdout, done.stdout + done.stderr
    assert "s.jsonl::steady PASSED" in done.stdout
    assert "s.jsonl::coin FAILED" in done.stdout
    assert done.stdout.count("s.jsonl::steady PASSED") == 1  # the suite under "." is collected once


def test_exitfirst_stops_reporting_after_one_sweep(project: Path) -> None:
    (project / "agent.py").write_text(AGENT + "\nimport pathlib\n_log = pathlib.Path(__file__).with_name('calls')\n"
                                      "_inner = respond\ndef respond(messages, context):\n"
                                      "    with _log.open('a') as f:\n        f.write('x')\n"
                                      "    return _inner(messages, context)\n")
    done = run_pytest(project, *FARM_ARGS, "s.jsonl", "-x")
    assert "1 failed" in done.stdout, done.stdout + done.stderr
    assert len((project / "calls").read_text()) == 20  # both cases ran once, in the one sweep


def test_bad_suite_is_a_collection_error_naming_file_and_line(project: Path) -> None:
    bad = '{"id": "a", "input": "x"}\n{"id": "b", "input": "x", "assert": {"type": "nope"}}\n'
    (project / "bad.jsonl").write_text(bad)
    done = run_pytest(project, "--farm-suite", "bad.jsonl", "--farm-agent", "py:agent.py:respond", "bad.jsonl")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "ERROR collecting bad.jsonl" in done.stdout
    assert "bad.jsonl:2:" in done.stdout
    assert "Traceback" not in done.stdout


def test_an_emptied_suite_file_is_a_collection_error_as_farm_test_exits_2(project: Path) -> None:
    (project / "s.jsonl").write_text("")
    done = run_pytest(project, *FARM_ARGS)  # the ordinary test beside it passes
    assert done.returncode == 2, done.stdout + done.stderr
    assert "ERROR collecting s.jsonl" in done.stdout and "s.jsonl: no test cases" in done.stdout
    assert "Traceback" not in done.stdout
    farm = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "s.jsonl", "-n", "py:agent.py:respond"],
                          cwd=project, capture_output=True, text=True, timeout=600, env=os.environ | {
                              "PYTHONPATH": str(ROOT)})
    assert farm.returncode == 2 and "s.jsonl: no test cases" in farm.stderr  # the same rule


def test_a_suite_directory_without_any_case_is_an_error_an_empty_file_beside_cases_is_not(project: Path) -> None:
    suites = project / "suites"
    suites.mkdir()
    (suites / "empty.jsonl").write_text("")
    args = ("--farm-suite", "suites", "--farm-agent", "py:agent.py:respond", "suites")
    done = run_pytest(project, *args)
    assert done.returncode == 2 and "empty.jsonl: no test cases" in done.stdout, done.stdout + done.stderr
    (suites / "a.jsonl").write_text(SUITE.splitlines()[0] + "\n")
    done = run_pytest(project, *args, "-v")
    assert done.returncode == 0 and "suites/a.jsonl::steady PASSED" in done.stdout, done.stdout + done.stderr


def test_a_wrong_farm_agent_is_a_usage_error_not_failed_tests(project: Path) -> None:
    calls = project / "ordinary_ran"
    (project / "test_plain.py").write_text(f"def test_ordinary():\n    open({str(calls)!r}, 'w').close()\n")
    for agent, named in (("py:missing.py:respond", "missing.py"), ("py:agent.py:nosuch", "nosuch"),
                         ("nosuch-agent", "nosuch-agent")):
        done = run_pytest(project, "--farm-suite", "s.jsonl", "--farm-agent", agent)
        assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
        assert "ERROR: farm:" in done.stderr and named in done.stderr, done.stderr
        assert "failed" not in done.stdout and "Traceback" not in done.stdout + done.stderr
        assert not calls.exists()  # refused before any test ran


def test_lf_reruns_only_the_failed_case(project: Path) -> None:
    args = ("-v",)
    first = run_pytest(project, *FARM_ARGS, "s.jsonl", *args)
    assert "1 failed, 1 passed" in first.stdout, first.stdout + first.stderr
    again = run_pytest(project, *FARM_ARGS, "s.jsonl", "--lf", *args)
    assert "s.jsonl::coin FAILED" in again.stdout, again.stdout
    assert "s.jsonl::steady" not in again.stdout.split("short test summary")[0].split("collected")[1]


@pytest.mark.redis
@pytest.mark.slow
def test_farm_broker_url_makes_the_sweep_distributed(project: Path, redis_server: str, redis_client: Any,
                                                     farm_worker: Any) -> None:
    farm_worker()
    done = run_pytest(project, "--farm-suite", "s.jsonl", "--farm-agent", f"py:{project / 'agent.py'}:respond",
                      "--farm-runs", "10", "s.jsonl", env={"FARM_BROKER_URL": redis_server})
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert "distributed" in done.stdout
    assert "pass rate 50.0%" in done.stdout
    assert redis_client.keys("*"), "the sweep left no trace in the broker's Redis: it ran in-process"


def test_the_entry_point_names_the_plugin_module() -> None:
    import importlib
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert declared == {"farm": "farm.pytest_plugin"}
    assert hasattr(importlib.import_module(declared["farm"]), "pytest_addoption")


def test_a_suite_directory_gives_each_file_its_items(project: Path) -> None:
    suites = project / "suites"
    suites.mkdir()
    (suites / "a.jsonl").write_text(SUITE)
    (suites / "b.jsonl").write_text(SUITE.splitlines()[0].replace('"steady"', '"other"', 1) + "\n")
    done = run_pytest(project, "--farm-suite", "suites", "--farm-agent", "py:agent.py:respond", "--farm-runs", "4",
                      "suites", "-v")
    out = done.stdout
    assert "suites/a.jsonl::steady PASSED" in out and "suites/a.jsonl::coin FAILED" in out, out + done.stderr
    assert "suites/b.jsonl::other PASSED" in out
    assert "2 passed, 1 failed" in out or "1 failed, 2 passed" in out


def test_a_node_id_on_the_command_line_runs_only_that_case(project: Path) -> None:
    done = run_pytest(project, *FARM_ARGS, "s.jsonl::steady", "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "s.jsonl::steady PASSED" in done.stdout and "coin" not in done.stdout
    assert "1 passed" in done.stdout


def test_pyproject_suites_join_only_a_run_that_names_no_path(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.farm]\nsuites = ["s.jsonl"]\n')
    agent = ("--farm-agent", "py:agent.py:respond", "--farm-runs", "2", "-v")
    plain = run_pytest(project, *agent, "test_plain.py")
    assert "test_plain.py::test_ordinary PASSED" in plain.stdout and "s.jsonl" not in plain.stdout, plain.stdout
    named = run_pytest(project, *agent, "s.jsonl::steady")
    assert "s.jsonl::steady PASSED" in named.stdout and "1 passed" in named.stdout, named.stdout


def test_a_run_without_farm_flags_imports_nothing_of_the_farm_but_the_plugin(tmp_path: Path) -> None:
    """Every pytest run where the farm is installed loads the plugin: without a suite it must not
    load the farm (the models, the suites, the sweep: about half a second)."""
    probe = ("import sys, pytest\n"
             "code = pytest.main(['--co', '-q', '-p', 'no:cacheprovider', '-p', 'no:farm', '-p', 'farm.pytest_plugin',"
             " '-o', 'addopts=', '--rootdir', '.', '.'])\n"
             "print(code, sorted(m for m in sys.modules if m == 'farm' or m.startswith('farm.')))\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FARM_", "PYTEST_"))}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=clean | {"PYTHONPATH": str(ROOT)})
    last = done.stdout.strip().splitlines()[-1]
    # farm.defaults: the face's version, constants only
    assert last == "5 ['farm', 'farm.defaults', 'farm.pytest_plugin']", done.stdout + done.stderr  # 5: none collected
