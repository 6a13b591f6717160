"""``farm worker`` runs one worker process per core under a supervisor (issue 16).

Real processes only: a private Redis, a real ``farm worker --processes 2``, its children found
through /proc, their consumers through Celery's inspect (``farm.distributed.broker.queues.consumers``).
Faults are real signals: a SIGKILLed child must come back, a SIGTERMed supervisor must stop all
its children and exit 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from farm.distributed.broker.queues import consumers
from farm.distributed.submit import create_celery_app
from farm.distributed.supervise import cgroup_quota, default_processes
from tests.support.processes import WorkerProcess, farm_env
from tests.support.servers import ROOT, free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children are found through /proc")

DEADLINE_S = 90.0


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found += [int(p) for p in text.split()]
    return sorted(found)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def wait_for(condition: Callable[[], Any], what: str, timeout: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"not within {timeout}s: {what}")


def queue_consumers(broker: str, queue: str) -> list[str]:
    app = create_celery_app(broker)
    try:
        return [name for name in consumers(app, queue, timeout=2.0) if name != "?"]
    finally:
        app.close()


def test_default_processes_is_the_usable_cores_capped_by_a_cgroup_quota(tmp_path: Path) -> None:
    quota = cgroup_quota()
    assert default_processes() == min(len(os.sched_getaffinity(0)), quota or 10**6) >= 1
    cpu_max = tmp_path / "cpu.max"
    for text, cores in (("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000\n", 1), ("junk", None)):
        cpu_max.write_text(text)
        assert cgroup_quota(str(cpu_max)) == cores
    assert cgroup_quota(str(tmp_path / "missing")) is None


def test_two_processes_consume_and_a_killed_one_is_restarted(
        farm_worker: Callable[..., WorkerProcess], redis_server: str) -> None:
    worker = farm_worker("--processes", "2", supervised=True, queue="supervised", concurrency=2)
    supervisor = worker.process.pid
    first = wait_for(lambda: (lambda c: c if len(c) == 2 else None)(children(supervisor)), "two children")
    names = wait_for(lambda: (lambda n: n if len(n) == 2 else None)(queue_consumers(redis_server, "supervised")),
                     "two consumers of the queue")
    assert names == sorted(f"{worker.name}-{i}@{os.uname().nodename}" for i in (1, 2))

    os.kill(first[0], signal.SIGKILL)
    wait_for(lambda: not alive(first[0]), "the killed child gone")
    restarted = wait_for(lambda: (lambda c: c if len(c) == 2 and first[0] not in c else None)(children(supervisor)),
                         "a new child in place of the killed one")
    assert first[1] in restarted
    wait_for(lambda: worker.text().count(" ready.") >= 3, "the new child ready")
    assert wait_for(lambda: (lambda n: n if len(n) == 2 else None)(queue_consumers(redis_server, "supervised")),
                    "two consumers again") == names
    assert "was killed by SIGKILL; restarting it" in worker.text()
    assert worker.process.poll() is None


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_stops_every_child_warm_and_the_supervisor_exits_0(
        farm_worker: Callable[..., WorkerProcess], stop: signal.Signals) -> None:
    worker = farm_worker("--processes", "2", supervised=True, queue="supervised-stop", concurrency=2)
    pids = wait_for(lambda: (lambda c: c if len(c) == 2 else None)(children(worker.process.pid)), "two children")
    wait_for(lambda: worker.text().count(" ready.") >= 2, "both children ready")
    worker.process.send_signal(stop)
    assert worker.process.wait(timeout=DEADLINE_S) == 0, worker.text()[-3000:]
    for pid in pids:
        wait_for(lambda pid=pid: not alive(pid), f"child {pid} stopped")
    text = worker.text()
    assert f"{stop.name}: stopping 2 worker processes" in text
    assert text.count("worker: Warm shutdown") == 2, text[-3000:]  # each child got it once: no cold shutdown
    assert "restarting" not in text


GIVES_UP_AT_ONCE = ("--", "broker_connection_retry_on_startup=false")
"""Celery's own shutdown with exit code 1 (``WorkerShutdown(1)``) when its broker is down at start."""


def test_a_worker_celery_stopped_on_an_error_exits_with_its_code(tmp_path: Path) -> None:
    """CI stop 20: a worker Celery stopped on an error (there "Unrecoverable error", when Redis came
    back mid-teardown) exited 0 because ``app.worker_main`` drops Celery's exit code; 0 reads as
    "told to stop", so its supervisor did not start it again and the fleet was gone."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    done = subprocess.run([sys.executable, "-m", "farm", "worker", "--processes", "1", "--no-supervise", "-c", "1",
                           "--broker", dead, *GIVES_UP_AT_ONCE], cwd=ROOT, env=farm_env(dead), capture_output=True,
                          text=True, timeout=DEADLINE_S, check=False)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "broker_connection_retry_on_startup=False" in done.stderr


def test_a_child_celery_stopped_on_an_error_is_restarted(farm_worker: Callable[..., WorkerProcess]) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    worker = farm_worker("--broker", dead, *GIVES_UP_AT_ONCE, broker=dead, supervised=True, queue="gives-up",
                         concurrency=1, wait=False)
    wait_for(lambda: worker.text().count("exited with 1; restarting it") >= 2, "the child started again, twice")
    assert worker.process.poll() is None


def test_a_child_told_to_shut_down_is_not_restarted(farm_worker: Callable[..., WorkerProcess],
                                                    redis_server: str) -> None:
    """``celery control shutdown`` (Celery's exit code 0): the child stays stopped, and the supervisor
    of no child left exits 0. The counterpart of the restart above, now that exit codes get through."""
    worker = farm_worker(supervised=True, queue="told-to-stop", concurrency=1)
    app = create_celery_app(redis_server)
    try:
        app.control.shutdown(destination=[f"{worker.name}@{os.uname().nodename}"])
    finally:
        app.close()
    assert worker.process.wait(timeout=DEADLINE_S) == 0, worker.text()[-3000:]
    assert "restarting" not in worker.text()


def test_a_killed_supervisor_takes_its_children_with_it(farm_worker: Callable[..., WorkerProcess]) -> None:
    worker = farm_worker("--processes", "2", supervised=True, queue="supervised-orphans", concurrency=2)
    pids = wait_for(lambda: (lambda c: c if len(c) == 2 else None)(children(worker.process.pid)), "two children")
    worker.kill()
    for pid in pids:
        wait_for(lambda pid=pid: not alive(pid), f"orphaned child {pid} stopped")


PID_AGENT = '''
import os, time


def respond(messages, context):
    with open(PIDS, "a") as f:  # by absolute path: the agent runs from its bundle's copy on the worker
        f.write(f"{os.getpid()}\\n")
    time.sleep(0.2)
    return "ok"
'''


def test_a_sweep_runs_on_every_process(tmp_path: Path, farm_worker: Callable[..., WorkerProcess],
                                       farm_cli: Any) -> None:
    (tmp_path / "pid_agent.py").write_text(f"PIDS = {str(tmp_path / 'pids.txt')!r}\n" + PID_AGENT)
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(f'{{"id": "c{i}", "input": "x", "assert": {{"type": "contains", "value": "ok"}}}}\n'
                             for i in range(4)))
    worker = farm_worker("--processes", "2", supervised=True, queue="supervised-sweep", concurrency=2)
    pids = wait_for(lambda: (lambda c: c if len(c) == 2 else None)(children(worker.process.pid)), "two children")
    wait_for(lambda: worker.text().count(" ready.") >= 2, "both children ready")
    result = farm_cli.run("test", "-i", str(suite), "-n", f"py:{tmp_path / 'pid_agent.py'}:respond", "--runs", "10",
                          "--no-progress", "--broker", farm_cli.broker, "--queue", "supervised-sweep",
                          "-o", str(tmp_path / "report.json"), timeout=300)
    assert result.returncode == 0, result.stderr
    ran = [int(line) for line in (tmp_path / "pids.txt").read_text().split()]
    assert len(ran) == 40 and set(ran) == set(pids)  # 40 runs of 0.2 s on 2 x 2 threads: both processes work
