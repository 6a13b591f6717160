"""Bundles on real workers (SPEC 24, issue 43 items 1 and 4): a sweep carries its code. Real
redis-server, real ``farm worker`` subprocesses started in empty directories with data directories
of their own; the submitter's tree is moved away or edited between sweeps.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore, connect
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]

EXIT_TIMEOUT_S = 240.0

AGENT = '''import time

import helpers
from pkg import sub


def respond(messages, context=None):
    start = time.time()
    time.sleep({delay})
    with open({log!r}, "a", encoding="utf-8") as out:  # when each call ran, and which code it ran
        out.write(f"{{helpers.VERSION}} {{start}} {{time.time()}}\\n")
    return helpers.VERSION + sub.SUFFIX
'''


def _project(root: Path, version: str, delay: float = 0.0) -> Path:
    """A project: a suite with a script check, a ``py:`` agent importing a neighbour and a package."""
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "suites").mkdir(exist_ok=True)
    (root / "agent.py").write_text(AGENT.format(delay=delay, log=str(root.parent / "calls.log")), encoding="utf-8")
    (root / "helpers.py").write_text(f"VERSION = {version!r}\n", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "sub.py").write_text("from . import tail\nSUFFIX = tail.TEXT\n", encoding="utf-8")
    (root / "pkg" / "tail.py").write_text(f"TEXT = '/{version}'\n", encoding="utf-8")
    (root / "tool.py").write_text("import pathlib, sys\nsys.stdin.read()\n"  # a cmd: agent reading a file beside it
                                  "print(pathlib.Path('answer.txt').read_text())\n", encoding="utf-8")
    (root / "answer.txt").write_text(f"{version}/{version}", encoding="utf-8")
    (root / "suites" / "rules.py").write_text("def known(output, input, expected):\n"
                                              "    return output in ('one/one', 'two/two')\n", encoding="utf-8")
    cases = [{"id": f"c{i}", "input": "x", "assert": {"type": "script", "script": "rules.py:known"}} for i in range(3)]
    (root / "suites" / "s.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return root


def _farm_test(farm_cli: Any, root: Path, *extra: str, agent: str = "py:agent.py:respond"
               ) -> subprocess.CompletedProcess[str]:
    """``farm test`` from the project's directory (``py:agent.py`` and its neighbours resolve there)."""
    return subprocess.run([sys.executable, "-m", "farm", "test", "-i", "suites/s.jsonl", "-n", agent,
                           "--detach", "--no-history", "--broker", farm_cli.broker, *extra], cwd=root,
                          env=farm_cli.env(), capture_output=True, text=True, timeout=120, check=False)


def _submit(farm_cli: Any, root: Path, *extra: str, runs: int = 2, agent: str = "py:agent.py:respond") -> str:
    done = _farm_test(farm_cli, root, "--runs", str(runs), *extra, agent=agent)
    assert done.returncode == 0, done.stderr
    return str(done.stdout.strip())


def _answers(farm_cli: Any, sweep_id: str, out: Path) -> set[str]:
    done = farm_cli.run("results", sweep_id, "-o", str(out), "--no-progress", timeout=EXIT_TIMEOUT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["metadata"]["status"] == "complete", report["metadata"]
    return {str(d["output"]) for case in report["results"] for d in case["run_details"]}


def _worker_env(tmp_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    empty = tmp_path / f"{name}-cwd"
    empty.mkdir()
    return empty, {"FARM_DATA_DIR": str(tmp_path / f"{name}-data")}


@pytest.mark.parametrize("agent", ["py:agent.py:respond", f"cmd:{sys.executable} tool.py"], ids=["py", "cmd"])
def test_a_worker_in_an_empty_directory_runs_a_sweep_whose_tree_is_gone(tmp_path, farm_worker, farm_cli, agent):
    root = _project(tmp_path / "proj", "one")
    sweep_id = _submit(farm_cli, root, "--own-queue", agent=agent)
    shutil.move(root, tmp_path / "elsewhere")  # the submitter's tree is not where the plan says
    cwd, env = _worker_env(tmp_path, "w")
    worker = farm_worker("--sweep", sweep_id, "--exit-when-idle", "3", queue=None, cwd=cwd, env=env)
    assert worker.process.wait(timeout=EXIT_TIMEOUT_S) == 0, worker.text()[-3000:]
    assert _answers(farm_cli, sweep_id, tmp_path / "r.json") == {"one/one"}
    assert list(cwd.iterdir()) == []  # nothing written where the worker was started
    copies = list((tmp_path / "w-data" / "bundles").iterdir())
    assert len(copies) == 1 and (copies[0] / "0" / "proj" / "pkg" / "tail.py").is_file()


def test_the_same_worker_runs_each_sweeps_own_code(tmp_path, farm_worker, farm_cli):
    cwd, env = _worker_env(tmp_path, "w")
    farm_worker(cwd=cwd, env=env)
    root = _project(tmp_path / "proj", "one")
    first = _submit(farm_cli, root)
    assert _answers(farm_cli, first, tmp_path / "1.json") == {"one/one"}
    _project(root, "two")  # edited: the neighbour module and the package's module alike
    second = _submit(farm_cli, root)
    assert _answers(farm_cli, second, tmp_path / "2.json") == {"two/two"}


def test_two_sweeps_with_two_versions_of_a_module_in_flight_at_once(tmp_path, farm_worker, farm_cli, redis_client):
    root = _project(tmp_path / "proj", "one", delay=0.2)
    first = _submit(farm_cli, root, runs=4)
    _project(root, "two", delay=0.2)
    second = _submit(farm_cli, root, runs=4)
    cwd, env = _worker_env(tmp_path, "w")
    farm_worker(cwd=cwd, env=env, concurrency=8)  # both sweeps' runs are queued: it takes them together
    assert _answers(farm_cli, first, tmp_path / "1.json") == {"one/one"}
    assert _answers(farm_cli, second, tmp_path / "2.json") == {"two/two"}
    # the premise: the worker had calls of both versions in flight at once (12 of 0.2 s each on 8 threads)
    calls = [line.split() for line in (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()]
    ones = [(float(start), float(end)) for version, start, end in calls if version == "one"]
    twos = [(float(start), float(end)) for version, start, end in calls if version == "two"]
    assert any(a < d and c < b for a, b in ones for c, d in twos)
    wait_for(lambda: redis_client.llen("farm") == 0, 10, "the queue to drain")


def test_no_bundle_keeps_the_shared_path_mode(tmp_path, farm_worker, farm_cli):
    root = _project(tmp_path / "proj", "one")
    sweep_id = _submit(farm_cli, root, "--no-bundle")
    cwd, env = _worker_env(tmp_path, "w")
    farm_worker(cwd=cwd, env=env)
    assert _answers(farm_cli, sweep_id, tmp_path / "r.json") == {"one/one"}
    assert not (tmp_path / "w-data" / "bundles").exists()


def test_an_over_cap_bundle_exits_2_naming_the_largest_files(tmp_path, farm_cli, redis_client):
    root = _project(tmp_path / "proj", "one")
    (root / "weights.bin").write_bytes(b"\0" * 3_000_000)
    (root / "corpus.txt").write_bytes(b"a" * 2_000_000)
    done = _farm_test(farm_cli, root, "--bundle-max", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "weights.bin" in done.stderr and "corpus.txt" in done.stderr and "--bundle-max" in done.stderr
    assert "Traceback" not in done.stderr
    assert redis_client.keys("farm:bundle:*") == [] and redis_client.keys("farm:sweep:*") == []


def test_a_sweep_in_flight_keeps_its_bundle_as_it_keeps_its_keys(redis_client, redis_server):
    store = SweepStore(connect(redis_server), ttl=100)
    sid, sha = "20261128T030000-abcdef", "ab" * 32
    redis_client.hset(keys.sweep_key(sid), mapping={"plan": "{}", "bundle": sha})
    redis_client.expire(keys.sweep_key(sid), 40)  # under half its TTL left: refreshed
    redis_client.set(keys.bundle_key(sha), "x", ex=40)
    assert store.keep_alive(sid)
    assert redis_client.ttl(keys.bundle_key(sha)) > 90


def test_a_bundle_gone_from_the_store_stops_the_sweep_naming_it(tmp_path, farm_worker, farm_cli, redis_client):
    root = _project(tmp_path / "proj", "one")
    sweep_id = _submit(farm_cli, root, "--own-queue")
    (bundle_key,) = redis_client.keys("farm:bundle:*")
    redis_client.delete(bundle_key)
    cwd, env = _worker_env(tmp_path, "w")
    worker = farm_worker("--sweep", sweep_id, "--exit-when-idle", "3", queue=None, cwd=cwd, env=env)
    done = farm_cli.run("results", sweep_id, "--no-progress", timeout=EXIT_TIMEOUT_S)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is gone from the store" in done.stderr and bundle_key.split(":")[-1][:16] in done.stderr
    assert worker.process.wait(timeout=EXIT_TIMEOUT_S) == 0, worker.text()[-3000:]
    assert not (tmp_path / "w-data" / "bundles").exists() or not any((tmp_path / "w-data" / "bundles").iterdir())


def test_a_matrix_outside_git_carries_every_arms_agent_from_a_subdirectory(tmp_path, farm_worker, farm_cli):
    root = tmp_path / "mx"  # no git: the roots come from the suite's and the agents' directories
    (root / "agents").mkdir(parents=True)
    (root / "suites").mkdir()
    for arm in ("a", "b"):
        (root / "agents" / f"{arm}.py").write_text(f"def respond(messages, context=None):\n    return 'ok-{arm}'\n",
                                                 encoding="utf-8")
    case = {"id": "t1", "input": "hi", "assert": {"type": "contains", "value": "ok"}}
    (root / "suites" / "s.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "suites/s.jsonl", "--arm",
                           "a=py:agents/a.py:respond", "--arm", "b=py:agents/b.py:respond", "--runs", "2",
                           "--own-queue", "--detach", "--no-history", "--broker", farm_cli.broker], cwd=root,
                          env=farm_cli.env(), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    sweep_id = done.stdout.strip()
    shutil.move(root, tmp_path / "elsewhere")  # the submitter's tree is not where the plan says
    cwd, env = _worker_env(tmp_path, "w")
    worker = farm_worker("--sweep", sweep_id, "--exit-when-idle", "3", queue=None, cwd=cwd, env=env)
    assert worker.process.wait(timeout=EXIT_TIMEOUT_S) == 0, worker.text()[-3000:]
    assert _answers(farm_cli, sweep_id, tmp_path / "r.json") == {"ok-a", "ok-b"}
    (copy,) = (tmp_path / "w-data" / "bundles").iterdir()
    assert (copy / "0" / "mx" / "agents" / "b.py").is_file() and (copy / "0" / "mx" / "suites" / "s.jsonl").is_file()
