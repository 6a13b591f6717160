"""Flower watches the farm: tasks by readable names with their arguments, behind basic auth.

Workers start with task events off (they cost CPU per run); a running Flower turns them on by
broadcast, which is what the end-to-end test relies on: its worker starts with the defaults.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.support.distributed_sweeps import write_suite
from tests.support.servers import ROOT, free_port, stop_process, wait_for_port

USER, PASSWORD = "farmer", "s3cret-pass"


def _get(url: str, *, auth: bool = True) -> tuple[int, Any]:
    request = urllib.request.Request(url)
    if auth:
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, None


def test_flower_refuses_to_start_without_a_password():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FARM_FLOWER_", "FLOWER_"))}
    done = subprocess.run([sys.executable, "-m", "farm", "flower", "--port", str(free_port())], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "FARM_FLOWER_USER and FARM_FLOWER_PASSWORD" in done.stderr


@pytest.mark.redis
@pytest.mark.slow
def test_flower_shows_the_farm_tasks_with_their_arguments(tmp_path, redis_client, farm_worker, farm_cli,
                                                          counting_agent):
    port = free_port()
    env = farm_cli.env(FARM_FLOWER_USER=USER, FARM_FLOWER_PASSWORD=PASSWORD)
    argv = [sys.executable, "-m", "farm", "flower", "--port", str(port), "--max-tasks", "500"]
    flower = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, timeout=60, process=flower)
        base = f"http://127.0.0.1:{port}"
        assert _get(f"{base}/api/tasks", auth=False)[0] == 401
        assert _get(f"{base}/api/tasks")[0] == 200
        worker = farm_worker(queue="flower")  # defaults: no task events until Flower asks
        _wait_for_log(worker, "Events of group {task} enabled by remote.")
        suite = write_suite(tmp_path / "f.jsonl", [{"id": "case-a", "input": "x"}, {"id": "case-b", "input": "y"}])
        agent = counting_agent()
        done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "2", "--queue", "flower",
                            "-o", str(tmp_path / "f.json"), "--broker", farm_cli.broker)
        assert done.returncode == 0, done.stderr
        agent.assert_once_each(4)
        sweep_id = json.loads((tmp_path / "f.json").read_text())["metadata"]["sweep_id"]
        tasks = _wait_for_tasks(f"{base}/api/tasks", {"farm.run": 4, "farm.aggregate": 2, "farm.report": 1})
    finally:
        stop_process(flower)
    runs = [t for t in tasks.values() if t["name"] == "farm.run"]
    shown = sorted((t["args"], t["state"]) for t in runs)
    assert shown == sorted((repr((sweep_id, case, n)), "SUCCESS") for case in ("case-a", "case-b") for n in (1, 2))
    assert all(t["result"].startswith("{'status': 'passed'") for t in runs)  # a failed run says 'failed' first
    reports = [t for t in tasks.values() if t["name"] == "farm.report"]
    assert sweep_id in reports[0]["args"]


def _wait_for_tasks(url: str, wanted: dict[str, int], timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    tasks: dict[str, Any] = {}
    while time.monotonic() < deadline:
        tasks = _get(url)[1] or {}
        names = [t.get("name") for t in tasks.values() if t.get("state") == "SUCCESS"]
        if all(names.count(name) >= n for name, n in wanted.items()):
            return tasks
        time.sleep(0.5)
    raise AssertionError(f"Flower never showed {wanted}: {tasks}")


def _wait_for_log(worker: Any, text: str, timeout: float = 60.0) -> None:
    """Until the worker's log shows ``text`` (Flower broadcasts ``enable_events`` every 5 s)."""
    deadline = time.monotonic() + timeout
    while text not in worker.text():
        if time.monotonic() > deadline:
            raise AssertionError(f"worker log never showed {text!r}:\n{worker.text()[-3000:]}")
        time.sleep(0.2)
