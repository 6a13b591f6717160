"""OpenTelemetry export of a sweep, delivered to a real OTLP/HTTP receiver started by the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.otlp_receiver import otlp_receiver
from tests.support.servers import ROOT
from tests.test_pytest_plugin import AGENT, SUITE

pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")

BLOCKED = ("import sys, runpy; sys.modules['opentelemetry'] = None; sys.argv = ['farm', *sys.argv[1:]]; "
           "runpy.run_module('farm', run_name='__main__')")
"""``python -m farm`` with the OpenTelemetry packages hidden, as if the extra were not installed."""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "s.jsonl").write_text(SUITE)
    return tmp_path


def farm_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FARM_", "OTEL_"))}
    return clean | {"PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(tmp_path / "data")} | extra


def run_farm(project: Path, *args: str, env: dict[str, str], blocked: bool = False) -> subprocess.CompletedProcess[str]:
    start = ["-c", BLOCKED] if blocked else ["-m", "farm"]
    return subprocess.run([sys.executable, *start, "test", "-i", "s.jsonl", "-n", "py:agent.py:respond",
                           "--runs", "10", "--no-history", "-o", "r.json", *args],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)


def test_the_sweep_and_each_case_arrive_as_spans_with_their_figures(project: Path) -> None:
    with otlp_receiver() as (served, server):
        done = run_farm(project, env=farm_env(project, OTEL_EXPORTER_OTLP_ENDPOINT=served.url))
        assert done.returncode == 1, done.stderr  # coin fails: the export does not change the verdict
        [sweep] = server.wait_for("farm.sweep")
        cases = {s.attributes["farm.case.id"]: s for s in server.wait_for("farm.case", 2)}
    assert server.paths[0] == "/v1/traces" and sweep.service == "agent-farm"
    assert sweep.attributes["farm.sweep.cases"] == 2 and sweep.attributes["farm.sweep.runs"] == 20
    coin, steady = cases["coin"], cases["steady"]
    assert coin.parent_id == sweep.span_id == steady.parent_id
    assert coin.attributes["farm.case.pass_rate"] == 50.0 and steady.attributes["farm.case.pass_rate"] == 100.0
    assert coin.attributes["farm.case.runs"] == 10
    assert coin.attributes["farm.case.ci_low"] == pytest.approx(23.7, abs=0.2)
    assert coin.attributes["farm.case.ci_high"] == pytest.approx(76.3, abs=0.2)
    assert coin.attributes["farm.case.stability_class"] == "unstable"
    assert coin.attributes["farm.case.failure_classes"] == ["assertion:contains"]
    assert steady.attributes["farm.case.failure_classes"] == []
    assert coin.status_code == 2 and steady.status_code != 2  # STATUS_CODE_ERROR for the failing case
    [(name, event)] = coin.events
    assert name == "gen_ai.evaluation.result"
    assert event["gen_ai.evaluation.score.value"] == 0.5 and event["gen_ai.evaluation.score.label"] == "fail"
    assert not [s for s in server.spans if s.name == "farm.run"]  # per-run spans are off by default


def test_otel_runs_adds_one_span_per_run_under_its_case(project: Path) -> None:
    with otlp_receiver() as (served, server):
        run_farm(project, "--otel-runs", env=farm_env(project, OTEL_EXPORTER_OTLP_ENDPOINT=served.url,
                                                     OTEL_SERVICE_NAME="my-evals"))
        runs = server.wait_for("farm.run", 20)
        cases = {s.span_id: s.attributes["farm.case.id"] for s in server.wait_for("farm.case", 2)}
    assert len(runs) == 20 and runs[0].service == "my-evals"
    by_case = [cases[r.parent_id] for r in runs]
    assert by_case.count("coin") == 10 and by_case.count("steady") == 10
    failed = [r for r in runs if r.attributes["farm.run.status"] == "failed"]
    assert len(failed) == 5 and all(r.attributes["farm.case.id"] == "coin" for r in failed)


def test_without_the_extra_the_variable_is_ignored_with_one_warning(project: Path) -> None:
    with otlp_receiver() as (served, server):
        done = run_farm(project, env=farm_env(project, OTEL_EXPORTER_OTLP_ENDPOINT=served.url), blocked=True)
        assert done.returncode == 1, done.stderr
        warnings = [line for line in done.stderr.splitlines() if "OpenTelemetry" in line]
        assert warnings == ["farm: OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed, so no "
                            "spans are exported: install the farm with its otel extra (pip install '.[otel]' in "
                            "the farm's checkout)"], done.stderr
        assert "Traceback" not in done.stderr and (project / "r.json").is_file()
    assert server.spans == []


def test_otel_flag_without_the_extra_is_bad_input(project: Path) -> None:
    done = run_farm(project, "--otel", env=farm_env(project), blocked=True)
    assert done.returncode == 2
    assert "--otel: OpenTelemetry is not installed" in done.stderr and "Traceback" not in done.stderr
    assert not (project / "r.json").exists()


@pytest.mark.redis
@pytest.mark.slow
def test_a_distributed_sweep_is_exported_by_the_worker_that_closes_it(project: Path, redis_server: str,
                                                                      redis_client: Any, farm_worker: Any) -> None:
    with otlp_receiver() as (served, server):
        farm_worker(env={"OTEL_EXPORTER_OTLP_ENDPOINT": served.url, "OTEL_SERVICE_NAME": "worker"})
        env = farm_env(project, FARM_BROKER_URL=redis_server, OTEL_EXPORTER_OTLP_ENDPOINT=served.url,
                       OTEL_SERVICE_NAME="submitter")
        done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "s.jsonl", "-n",
                               f"py:{project / 'agent.py'}:respond", "--runs", "10", "--no-history"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 1, done.stderr
        [sweep] = server.wait_for("farm.sweep")
        cases = server.wait_for("farm.case", 2)
    assert sweep.service == "worker"  # not the submitter: exported once, where the sweep closed
    assert sorted(c.attributes["farm.case.pass_rate"] for c in cases) == [50.0, 100.0]
    assert len([s for s in server.spans if s.name == "farm.sweep"]) == 1


@pytest.mark.parametrize("collector", ["refusing", "silent"])
def test_a_collector_down_costs_one_farm_line_after_the_summary(project: Path, collector: str) -> None:
    """No SDK retry lines before the summary; one line of the farm's after it; the reports complete."""
    import socket

    from tests.support.servers import free_port

    with socket.socket() as silent:  # "silent": takes the connection, never answers (the timeout ends it)
        if collector == "silent":
            silent.bind(("127.0.0.1", 0))
            silent.listen()
        port = silent.getsockname()[1] if collector == "silent" else free_port()
        done = run_farm(project, env=farm_env(project, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}"))
    assert done.returncode == 1, done.stderr  # the suite's verdict, as without OpenTelemetry
    lines = done.stderr.splitlines()
    said = [n for n, line in enumerate(lines) if "OpenTelemetry" in line or "export" in line.lower()]
    assert len(said) == 1, done.stderr
    assert lines[said[0]].startswith(f"farm: OpenTelemetry export failed: the collector at http://127.0.0.1:{port}")
    summary = next(n for n, line in enumerate(lines) if line.startswith("report: "))
    assert said[0] > summary, done.stderr
    assert (project / "r.json").is_file()
