"""Issue 27, second half: what a newcomer's sweep reports, through the real ``farm`` command.

A run past its case's ``timeout`` is class ``timeout`` (``infra:timeout`` is a transport's read
timeout); a skipped case is not a run; ``summary.classes`` counts cases by stability class beside
Yao's ``unstable_cases`` (not stable); an agent nobody could reach is exit 3, not 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.farm_process import farm
from tests.support.servers import free_port

pytestmark = pytest.mark.slow  # every test runs ``python -m farm`` in a process of its own

AGENT = """
import asyncio

async def respond(messages):
    text = messages[-1]["content"]
    if text == "slow":
        await asyncio.sleep(60)
    return text
"""




def write_suite(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def test_a_slow_agent_is_class_timeout_and_a_skipped_case_is_no_run(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    suite = write_suite(tmp_path / "suite.jsonl", [
        {"id": "slow", "input": "slow", "timeout": "1s"},
        {"id": "fine", "input": "ok"},
        {"id": "later", "input": "ok", "skip": True},
        {"id": "wrong", "input": "ok", "assert": {"type": "contains", "value": "nope"}},
    ])
    done = farm("test", "-i", str(suite), "-n", "py:agent.py:respond", "--runs", "2", "--no-progress",
                "-o", "r.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    slow = next(r for r in report["results"] if r["id"] == "slow")
    assert list(slow["failure_classes"]) == ["timeout"]
    summary = report["summary"]
    assert set(summary["failure_classes"]) == {"timeout", "assertion:contains"}
    assert summary["total_runs"] == 6 and summary["by_status"]["skipped"] == 1
    assert summary["unstable_cases"] == 2  # Yao's meaning: not stable (both broken here)
    assert summary["classes"] == {"stable": 1, "mostly_stable": 0, "unstable": 0, "highly_unstable": 0, "broken": 2}
    assert "6 runs" in done.stderr and "2 timeouts" in done.stderr


def test_an_agent_nobody_could_reach_is_exit_3_after_the_whole_sweep(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/chat"  # nothing listens there
    suite = write_suite(tmp_path / "suite.jsonl", [{"id": f"c{i}", "input": "hi"} for i in range(3)])
    done = farm("test", "-i", str(suite), "-n", url, "--runs", "2", "--no-progress", "-o", "r.json", cwd=tmp_path,
                )
    assert done.returncode == 3, done.stderr
    assert "the agent could not be reached" in done.stderr
    assert "retry bias:" not in done.stderr  # retried connects with nothing reached: nothing to compare
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["total_runs"] == 6  # the sweep still ran to the end
    assert set(report["summary"]["failure_classes"]) == {"infra:connect"}


def test_one_reachable_run_keeps_exit_1(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    suite = write_suite(tmp_path / "suite.jsonl", [{"id": "wrong", "input": "ok",
                                                    "assert": {"type": "contains", "value": "nope"}}])
    done = farm("test", "-i", str(suite), "-n", "py:agent.py:respond", "--no-progress", "-o", "r.json",
                cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "could not be reached" not in done.stderr


class _Answers:
    """A real HTTP agent on 127.0.0.1 answering by the user's message: ``refuse`` 401, ``missing``
    404, ``busy`` 503 (transient: retried), anything else 200 with the message as the reply."""

    def __enter__(self) -> str:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                text = request["messages"][-1]["content"]
                status = {"refuse": 401, "missing": 404, "busy": 503}.get(text, 200)
                body = json.dumps({"error": "no"} if status != 200 else {"text": text}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/chat"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _sweep(tmp_path: Path, url: str, cases: list[dict[str, Any]]) -> Any:
    suite = write_suite(tmp_path / "suite.jsonl", cases)
    return farm("test", "-i", str(suite), "-n", url, "--runs", "2", "--no-progress", "-o", "r.json", cwd=tmp_path)


def test_credentials_refused_on_every_run_is_exit_3(tmp_path: Path) -> None:
    """A skipped case beside them is no run: it does not keep the sweep from exit 3."""
    with _Answers() as url:
        done = _sweep(tmp_path, url, [{"id": "c", "input": "refuse"}, {"id": "s", "input": "ok", "skip": True}])
    assert done.returncode == 3, done.stderr
    assert "the agent could not be reached" in done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert list(report["summary"]["failure_classes"]) == ["harness:config"]  # the class stays (SPEC 14.2)


def test_a_mix_of_refused_and_answered_runs_or_a_404_everywhere_is_not_exit_3(tmp_path: Path) -> None:
    """Exit 3 only when EVERY run failed to reach the agent: one answered run (failing its check) or
    a 404 (the test's own mistake, not refused credentials) keep exit 1. (A sweep of skipped cases
    only is bad input, exit 2: there is no sweep of zero runs to call unreachable.)"""
    wrong = {"type": "contains", "value": "nope"}
    sweeps = {"mix": ([{"id": "r", "input": "refuse"}, {"id": "a", "input": "ok", "assert": wrong}], 1),
              "404": ([{"id": "m", "input": "missing"}], 1)}
    with _Answers() as url:
        for name, (cases, code) in sweeps.items():
            (tmp_path / name).mkdir()
            done = _sweep(tmp_path / name, url, cases)
            assert done.returncode == code, (name, done.stderr)
            assert "could not be reached" not in done.stderr, name


def _report_file(path: Path, cases: dict[str, int], **metadata: Any) -> Path:
    """A JSON report of ``cases`` (id: passed runs of 20)."""
    from tests.support.browser_fixtures import case_stats, run, sweep_report

    stats = [case_stats(cid, [run(i + 1, "passed" if i < passed else "failed") for i in range(20)])
             for cid, passed in cases.items()]
    path.write_text(sweep_report(stats, **metadata).model_dump_json())
    return path


def test_compare_with_an_interrupted_base_calls_its_missing_cases_not_run(tmp_path: Path) -> None:
    base = _report_file(tmp_path / "base.json", {"a": 20}, sweep_id="b1", status="stopped", stopped="interrupted",
                        not_run=["b", "c"])
    head = _report_file(tmp_path / "head.json", {"a": 20, "b": 20, "c": 0}, sweep_id="h1", status="complete")
    done = farm("compare", str(base), str(head), "-o", "c.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    verdicts = {c["id"]: c["verdict"] for c in json.loads((tmp_path / "c.json").read_text())["cases"]}
    assert verdicts == {"a": "unchanged", "b": "not_run", "c": "not_run"}
    assert "BASE b1 did not finish: 2 cases missing from it are not_run" in done.stderr
    complete = _report_file(tmp_path / "complete.json", {"a": 20}, sweep_id="b2", status="complete")
    done = farm("compare", str(complete), str(head), "-o", "c.json", cwd=tmp_path)
    verdicts = {c["id"]: c["verdict"] for c in json.loads((tmp_path / "c.json").read_text())["cases"]}
    assert verdicts["b"] == "new" and "did not finish" not in done.stderr


def test_no_retry_bias_line_when_no_retried_run_reached_the_agent(tmp_path: Path) -> None:
    """Every run retried on 503 and failed: there is no clean run to compare, so no line (it once
    said "1 runs of 1 cases needed a transient retry"); counts are plural only when they are."""
    with _Answers() as url:
        done = farm("test", "-i", str(write_suite(tmp_path / "suite.jsonl", [{"id": "b", "input": "busy"}])),
                    "-n", url, "--runs", "1", "--no-progress", cwd=tmp_path, env={"FARM_RETRY_ATTEMPTS": "2"})
    assert done.returncode in (1, 3), done.stderr
    assert "retry bias:" not in done.stderr, done.stderr
