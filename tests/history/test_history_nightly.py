"""The nightly loop: real ``farm worker`` processes record and compare nightly sweeps and post to a
real webhook on 127.0.0.1; and the loop's own rules (one line, notify once) without workers."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from farm.history.nightly import NightlySettings, run_nightly
from farm.history.store import HistoryStore
from farm.history.tables import comparisons, sweeps
from farm.history.worker import record_finished_sweep
from farm.models import SweepReport
from tests.support.browser_fixtures import make_report
from tests.support.servers import HOST, serve_in_thread

AGENT = f"py:{Path(__file__).resolve().parents[1] / 'agents' / 'quality.py'}:quality"


class Hook(HTTPServer):
    """A webhook receiver: keeps every JSON body POSTed to it."""

    def __init__(self) -> None:
        super().__init__((HOST, 0), _HookHandler)
        self.lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []

    def wait_for(self, count: int, timeout: float = 120.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.bodies) >= count:
                    return list(self.bodies)
            time.sleep(0.2)
        raise AssertionError(f"webhook got {len(self.bodies)} posts, expected {count}")


class _HookHandler(BaseHTTPRequestHandler):
    server: Hook

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.bodies.append(body)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


# ------------------------------------------------------------------------------------ the loop's rules


def nightly_report(sweep_id: str, day: int, passed: int) -> SweepReport:
    report = make_report(sweep_id, f"2026-11-0{day}T02:00:00Z", {"a": (passed, 20), "b": (20, 20)},
                         tags={"trigger": "nightly"}, history="worker")
    return report


def test_first_then_regressed_nightly_notify_once_each(sqlite_history_url: str, tmp_path: Path) -> None:
    posts: list[dict[str, Any]] = []
    settings = NightlySettings(notify_url="http://hooks.invalid/x", report_dir=str(tmp_path / "reports"))
    store = HistoryStore.open(sqlite_history_url)
    try:
        first = run_nightly(store, nightly_report("n1", 1, 20), settings, post=lambda url, body: posts.append(body))
        assert first.notified and not first.regressed
        assert posts[0]["text"] == (f"agent-farm nightly n1: recorded; nothing to compare with yet (no earlier "
                                    f"nightly, no baseline). Report: {tmp_path / 'reports' / 'n1.html'}")
        store.set_baseline("nightly", "n1")
        second = run_nightly(store, nightly_report("n2", 2, 4), settings, post=lambda url, body: posts.append(body))
        again = run_nightly(store, nightly_report("n2", 2, 4), settings, post=lambda url, body: posts.append(body))
        assert second.notified and second.regressed and not again.notified and len(posts) == 2
        text = posts[1]["text"]
        assert text.startswith("agent-farm nightly n2: REGRESSED (vs the last nightly n1: 1 regressed, ")
        assert "; vs baseline nightly n1: 1 regressed" in text and "\n" not in text
        assert posts[1]["comparisons"]["last-nightly"]["regressed_cases"] == ["a"] and posts[1]["regressed"]
        html = (tmp_path / "reports" / "n2.html").read_text()
        assert 'id="compared-with"' in html
    finally:
        store.close()


def test_a_webhook_that_is_down_does_not_fail_the_loop(sqlite_history_url: str) -> None:
    def refuse(url: str, body: dict[str, Any]) -> None:
        raise ConnectionRefusedError("nobody home")

    store = HistoryStore.open(sqlite_history_url)
    try:
        outcome = run_nightly(store, nightly_report("n1", 1, 20),
                              NightlySettings(notify_url="http://127.0.0.1:9/secret-token"), post=refuse)
        assert not outcome.notified and store.sweep("n1") is not None
    finally:
        store.close()


def test_the_worker_hook_records_only_what_is_its_to_record(sqlite_history_url: str) -> None:
    env = {"FARM_HISTORY_URL": sqlite_history_url}
    calls: list[int] = []

    def load(report: SweepReport) -> Any:
        return lambda: calls.append(1) or report

    assert record_finished_sweep(load(nightly_report("n1", 1, 20)), env={}) is None and calls == []
    submitters = make_report("s1", "2026-11-01T02:00:00Z", {"a": (1, 1)}, history="submitter")
    assert record_finished_sweep(load(submitters), env=env) is None
    detached = make_report("d1", "2026-11-01T03:00:00Z", {"a": (1, 1)}, history="worker")
    assert record_finished_sweep(load(detached), env=env) == "recorded"
    assert record_finished_sweep(load(nightly_report("n1", 1, 20)), env=env) == "nightly"
    store = HistoryStore.open(sqlite_history_url)
    try:
        assert [s.sweep_id for s in store.sweeps()] == ["d1", "n1"]
    finally:
        store.close()
    assert record_finished_sweep(lambda: None, env={"FARM_HISTORY_URL": "mysql://nope"}) is None  # logged


# ------------------------------------------------------------------------------------ real workers


def _nightly(app: Any, suite: Path, queue: str) -> str:
    return str(app.send_task("farm.nightly", args=[str(suite)], queue=queue).get(timeout=120))


@pytest.mark.slow
@pytest.mark.redis
def test_nightly_sweeps_on_real_workers_are_recorded_compared_and_announced(
        history_url: str, redis_client: Any, farm_worker: Any, farm_cli: Any, tmp_path: Path) -> None:
    from farm.distributed.submit import create_celery_app

    suite = tmp_path / "nightly.jsonl"
    suite.write_text("\n".join(json.dumps({"id": c, "input": c, "expected": "yes"}) for c in ("a", "b")) + "\n")
    quality = tmp_path / "quality.txt"
    quality.write_text("1.0")
    queue = "nightly"
    with serve_in_thread(Hook()) as served:
        farm_worker(queue=queue, env={
            "FARM_HISTORY_URL": history_url, "FARM_NOTIFY_URL": f"{served.url}/hook",
            "FARM_REPORT_BASE_URL": "https://reports.example/farm", "FARM_TEST_QUALITY_FILE": str(quality),
            "FARM_NIGHTLY_ARGS": f"--runs 10 -n {AGENT} --queue {queue} --no-progress"})
        app = create_celery_app(farm_cli.broker)
        first = _nightly(app, suite, queue)
        hook: Hook = served.server
        assert hook.wait_for(1)[0]["text"] == (
            f"agent-farm nightly {first}: recorded; nothing to compare with yet (no earlier nightly, no baseline). "
            f"Report: https://reports.example/farm/{first}.html")
        blessed = farm_cli.run("baseline", "set", "nightly", "last:trigger=nightly", "--history", history_url,
                               local=True)
        assert blessed.returncode == 0, blessed.stderr
        quality.write_text("0.0")
        second = _nightly(app, suite, queue)
        body = hook.wait_for(2)[1]
        assert body["sweep_id"] == second and body["regressed"] is True
        assert body["text"].startswith(f"agent-farm nightly {second}: REGRESSED (vs the last nightly {first}: "
                                       "2 regressed")
        assert f"vs baseline nightly {first}: 2 regressed" in body["text"]
        assert sorted(body["comparisons"]["baseline:nightly"]["regressed_cases"]) == ["a", "b"]
        redelivered = app.send_task("farm.report", args=[second], queue=queue).get(timeout=60)
        assert redelivered == {"sweep": second, "stored": False, "history": "nightly"}
        time.sleep(1.0)
        assert len(hook.bodies) == 2  # the redelivered report task recorded nothing new, told no one again
    store = HistoryStore.open(history_url)
    try:
        nightlies = store.sweeps(tag=("trigger", "nightly"))
        assert [s.sweep_id for s in nightlies] == [second, first]
        with store.engine.connect() as conn:
            kinds = sorted(conn.execute(select(comparisons.c.kind)).scalars())
        assert kinds == ["baseline:nightly", "last-nightly"]
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.redis
def test_distributed_sweeps_are_recorded_by_the_submitter_or_by_the_worker(
        sqlite_history_url: str, redis_client: Any, farm_worker: Any, farm_cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "a", "expected": "yes"}) + "\n")
    farm_worker(queue="hist-submitter")  # no FARM_HISTORY_URL: this worker records nothing
    attached = farm_cli.run("test", "-i", str(suite), "-n", AGENT, "--runs", "3", "--queue", "hist-submitter",
                            "--history", sqlite_history_url, "--no-progress", "-o", str(tmp_path / "r.json"))
    assert attached.returncode == 0, attached.stderr
    farm_worker(queue="hist-worker", env={"FARM_HISTORY_URL": sqlite_history_url})
    detached = farm_cli.run("test", "-i", str(suite), "-n", AGENT, "--runs", "3", "--queue", "hist-worker",
                            "--detach", "--tag", "who=worker")
    assert detached.returncode == 0, detached.stderr
    sweep_id = detached.stdout.strip().splitlines()[-1]
    store = HistoryStore.open(sqlite_history_url)
    try:
        deadline = time.monotonic() + 120
        while store.sweep(sweep_id) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        recorded = store.sweeps()
        assert len(recorded) == 2 and recorded[0].sweep_id == sweep_id
        assert recorded[0].tags == {"who": "worker"} and recorded[1].tags == {}
        with store.engine.connect() as conn:
            settings = dict(conn.execute(select(sweeps.c.sweep_id, sweeps.c.settings)).all())
        assert settings[recorded[1].sweep_id]["distributed"] is True
        assert settings[sweep_id]["detach"] is True
    finally:
        store.close()
