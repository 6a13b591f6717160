"""Issue 27: what an agent leaves running ends with its run, through the real ``farm`` command.

A ``cmd:`` program that answers and exits while a ``setsid`` helper of its keeps stdout open is
a passing run (not a timeout), and the helper is gone when the run is; a Python agent's
double-forked ``setsid`` grandchild comes back to ``farm test`` (a child subreaper) and is ended
when the sweep ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from tests.support.farm_process import farm

SETSID_AGENT = """#!/bin/sh
cat >/dev/null
setsid sh -c 'echo $$ >> "$1"; exec sleep 600' helper "$PWD/pids" &
echo answered
"""

FORKING_AGENT = """
import os, subprocess, sys

def respond(messages):
    # a grandchild in a session of its own: its parent exits at once, so it is nobody's child
    subprocess.run([sys.executable, "-c",
                    "import os, subprocess, sys; "
                    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
                    "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
                    "stderr=subprocess.DEVNULL); "
                    "open(sys.argv[1], 'a').write(f'{p.pid}\\\\n')",
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids")], check=True)
    return "forked"
"""




def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def gone_soon(pids: list[int], within: float = 30.0) -> bool:
    """True once none of ``pids`` runs (generous: the machine is busy; it returns as soon as they are)."""
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def helpers(tmp_path: Path) -> list[int]:
    return [int(p) for p in (tmp_path / "pids").read_text().split()]


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def test_a_setsid_helper_holding_stdout_neither_times_the_run_out_nor_outlives_it(tmp_path: Path) -> None:
    agent = tmp_path / "agent.sh"
    agent.write_text(SETSID_AGENT)
    agent.chmod(0o755)
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "c", "input": "hi", "timeout": "20s"}) + "\n")
    try:
        done = farm("test", "-i", "suite.jsonl", "-n", "cmd:agent.sh", "--runs", "2", "--no-progress",
                    "-o", "r.json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        [case] = json.loads((tmp_path / "r.json").read_text())["results"]
        assert case["passed"] == 2 and case["timeouts"] == 0
        assert [d["output"] for d in case["run_details"]] == ["answered", "answered"]
        # a setsid helper writes its own pid, maybe after the run it outlived answered: wait for both
        deadline = time.monotonic() + 30
        while len(helpers(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(helpers(tmp_path)) == 2
        assert gone_soon(helpers(tmp_path))
    finally:
        if (tmp_path / "pids").exists():
            kill_all(helpers(tmp_path))


def test_a_python_agents_orphaned_grandchild_ends_with_farm_test(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(FORKING_AGENT)
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "c", "input": "hi"}) + "\n")
    try:
        done = farm("test", "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--runs", "2", "--no-progress",
                    "-o", "r.json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert len(helpers(tmp_path)) == 2
        assert gone_soon(helpers(tmp_path))
    finally:
        if (tmp_path / "pids").exists():
            kill_all(helpers(tmp_path))


def _worker_sweep(tmp_path: Path, farm_cli: Any, queue: str) -> None:
    (tmp_path / "agent.py").write_text(FORKING_AGENT)
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "c", "input": "hi"}) + "\n")
    # --no-bundle: the agent writes its helper's pid beside its own file, which a bundle's copy would move
    done = farm_cli.run("test", "-i", str(tmp_path / "suite.jsonl"), "-n", f"py:{tmp_path / 'agent.py'}:respond",
                        "--no-progress", "--broker", farm_cli.broker, "--queue", queue, "-o", str(tmp_path / "r.json"),
                        "--no-bundle", timeout=300)
    assert done.returncode == 0, done.stderr


def test_what_an_agent_left_on_a_worker_ends_with_the_worker(tmp_path: Path, redis_client: Any,
                                                              farm_worker: Callable[..., Any], farm_cli: Any) -> None:
    worker = farm_worker(queue="leftovers", concurrency=2)
    try:
        _worker_sweep(tmp_path, farm_cli, "leftovers")
        [grandchild] = helpers(tmp_path)
        assert alive(grandchild)  # the worker still runs: its agent's leftover is its own now
        assert psutil.Process(grandchild).ppid() == worker.process.pid  # came back to the worker (subreaper)
        worker.stop()
        assert gone_soon([grandchild])
    finally:
        kill_all(helpers(tmp_path) if (tmp_path / "pids").exists() else [])


def test_a_killed_worker_process_leaves_its_agents_leftovers_to_the_supervisor(
        tmp_path: Path, redis_client: Any, farm_worker: Callable[..., Any], farm_cli: Any) -> None:
    worker = farm_worker("--processes", "1", supervised=True, queue="leftovers-sup", concurrency=2)
    try:
        _worker_sweep(tmp_path, farm_cli, "leftovers-sup")
        [grandchild] = helpers(tmp_path)
        owner = psutil.Process(grandchild).ppid()
        assert owner != worker.process.pid and psutil.Process(owner).ppid() == worker.process.pid
        os.kill(owner, 9)  # the worker process dies as an OOM kill would: the supervisor ends what it left
        assert gone_soon([grandchild])
    finally:
        kill_all(helpers(tmp_path) if (tmp_path / "pids").exists() else [])


CHECKS_THE_LAST = """
import os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def respond(messages):
    path = os.path.join(HERE, "pids")
    before = [int(p) for p in open(path).read().split()] if os.path.exists(path) else []
    subprocess.run([sys.executable, "-c",
                    "import subprocess, sys; "
                    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
                    "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
                    "stderr=subprocess.DEVNULL); open(sys.argv[1], 'a').write(f'{p.pid}\\\\n')", path], check=True)
    return "left running: " + str(sum(alive(p) for p in before))
"""


def test_an_isolated_call_ends_what_it_left_before_the_next_call(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(CHECKS_THE_LAST)
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "c", "input": "hi"}) + "\n")
    try:
        done = farm("test", "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--isolate", "--runs", "3",
                    "--parallel", "1", "--no-progress", "-o", "r.json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        [case] = json.loads((tmp_path / "r.json").read_text())["results"]
        assert sorted(d["output"] for d in case["run_details"]) == ["left running: 0"] * 3
        assert gone_soon(helpers(tmp_path))
    finally:
        if (tmp_path / "pids").exists():
            kill_all(helpers(tmp_path))


CMD_CHECKS_THE_LAST = """#!/bin/sh
cat >/dev/null
left=0
if [ -f pids ]; then
  for pid in $(cat pids); do
    if [ -d /proc/$pid ] && ! grep -q ') Z' /proc/$pid/stat; then left=$((left + 1)); fi
  done
fi
setsid sh -c 'echo $$ >> "$1"; exec sleep 600' helper "$PWD/pids" </dev/null >/dev/null 2>&1 &
echo "left running: $left"
"""


def test_a_cmd_turn_ends_its_setsid_helper_before_the_next_turn(tmp_path: Path) -> None:
    agent = tmp_path / "agent.sh"
    agent.write_text(CMD_CHECKS_THE_LAST)
    agent.chmod(0o755)
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "c", "input": "hi"}) + "\n")
    try:
        done = farm("test", "-i", "suite.jsonl", "-n", "cmd:agent.sh", "--runs", "3", "--parallel", "1",
                    "--no-progress", "-o", "r.json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        [case] = json.loads((tmp_path / "r.json").read_text())["results"]
        assert sorted(d["output"] for d in case["run_details"]) == ["left running: 0"] * 3
    finally:
        if (tmp_path / "pids").exists():
            kill_all(helpers(tmp_path))


CMD_COUNTS_ZOMBIES = """
import os, sys, time

def zombies_beside_me():
    kids = []
    for task in os.listdir(f"/proc/{os.getppid()}/task"):
        with open(f"/proc/{os.getppid()}/task/{task}/children") as listing:
            kids += listing.read().split()
    states = []
    for pid in kids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                states.append(stat.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            pass
    return states.count("Z")

sys.stdin.read()
seen = zombies_beside_me()
if os.fork() == 0:  # a setsid child that exits at once, never waited for: a zombie of ours, then the farm's
    os.setsid()
    os._exit(0)
time.sleep(0.2)
print(f"zombies: {seen}")
"""


def test_a_cmd_turns_exited_setsid_child_is_reaped_not_left_a_zombie(tmp_path: Path) -> None:
    """A subreaper that never waits for what comes back to it piles up zombies in a long-lived
    worker: each turn's program sees how many the turns before it left beside it."""
    (tmp_path / "agent.py").write_text(CMD_COUNTS_ZOMBIES)
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "c", "input": "hi"}) + "\n")
    done = farm("test", "-i", "suite.jsonl", "-n", "cmd:agent.py", "--runs", "3", "--parallel", "1",
                "--no-progress", "-o", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [case] = json.loads((tmp_path / "r.json").read_text())["results"]
    assert sorted(d["output"] for d in case["run_details"]) == ["zombies: 0"] * 3


CMD_OVERLAPPING = """
import os, random, subprocess, sys, time

sys.stdin.read()
helper = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with open("pids", "a") as pids:
    pids.write(f"{helper.pid}\\n")
time.sleep(random.uniform(0.0, 0.4))  # the turns overlap: others end while this one still runs
print("answered" if helper.poll() is None else "my helper was killed by another turn")
"""


def test_a_turns_cleanup_ends_only_its_own_processes(tmp_path: Path) -> None:
    """Turns of one process overlap: each one's end kills its own program's leftovers, never another
    turn's program (its run would be a crash) nor its helper, nor farm test itself."""
    (tmp_path / "agent.py").write_text(CMD_OVERLAPPING)
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "c", "input": "hi"}) + "\n")
    try:
        done = farm("test", "-i", "suite.jsonl", "-n", "cmd:agent.py", "--runs", "12", "--parallel", "4",
                    "--no-progress", "-o", "r.json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        [case] = json.loads((tmp_path / "r.json").read_text())["results"]
        assert case["passed"] == 12 and {d["output"] for d in case["run_details"]} == {"answered"}
        assert len(helpers(tmp_path)) == 12 and gone_soon(helpers(tmp_path))
    finally:
        if (tmp_path / "pids").exists():
            kill_all(helpers(tmp_path))


def test_a_child_whose_environment_reads_empty_is_looked_at_again_not_taken_for_unmarked() -> None:
    """Between ``setsid`` and its program (and while any process execs) the kernel shows an empty
    environment: a turn's ``setsid`` helper read then looked unmarked and outlived its turn on a busy
    machine (seen under pytest-xdist). A child whose environment reads empty is unsure: looked at
    again, never ended on that ground alone. One run with no environment at all stands in for it."""
    import subprocess

    from farm.agents import reaper

    empty = subprocess.Popen(["/bin/sleep", "60"], env={}, start_new_session=True)
    try:
        assert reaper._mark_of(psutil.Process(empty.pid)) is None
        found, unsure = reaper._leftovers(reaper.new_mark(), group=empty.pid + 1)
        assert empty.pid not in {p.pid for p in found} and unsure
        reaper.end_turn_leftovers(reaper.new_mark(), empty.pid + 1)
        assert empty.poll() is None  # not this turn's: left alone
    finally:
        empty.kill()
        empty.wait()
