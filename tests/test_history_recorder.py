"""``farm test`` records its sweep through a child process that opens the history beside the sweep
(``farm.history.recorder``): what a user does to the command still decides what is recorded.

A real ``python -m farm test`` runs a suite whose agent answers some runs and hangs on others.
A terminal's Ctrl-C reaches the whole process group: the sweep stops with what ran and that is
recorded (the recorder, in a session of its own, is not killed mid-write). A killed ``farm test``
records nothing and leaves no recorder behind. The history's URL never appears on a command line.
Each against a SQLite file and a PostgreSQL database of the test session's own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from farm.history.store import HistoryStore
from tests.servers import ROOT

AGENT = f"py:{ROOT / 'tests' / 'agents' / 'basic.py'}:stalls"
WAIT_S = 60.0
CASES = ["fast", "mixed", "stall", "after"]
"""As in test_interrupts: with --runs 2 --parallel 2 three runs complete, then two hang."""


def _start(tmp_path: Path, history: str) -> subprocess.Popen[bytes]:
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": c, "input": "x", "expected": "done"}) + "\n" for c in CASES))
    argv = [sys.executable, "-m", "farm", "test", "-i", str(suite), "-n", AGENT, "--runs", "2", "--parallel", "2",
            "--no-progress", "-o", str(tmp_path / "r.jsonl"), "--history", history]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {
        "PYTHONPATH": str(ROOT), "FARM_DATA_DIR": str(tmp_path / "data"), "FARM_STOP_GRACE": "1"}
    # its own process group, as a shell gives a foreground job: a Ctrl-C goes to the whole group
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def _runs_done(tmp_path: Path) -> int:
    path = tmp_path / "r.jsonl"
    return path.read_text().count('"type": "result"') if path.exists() else 0


def _wait_for_runs(process: subprocess.Popen[bytes], tmp_path: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while _runs_done(tmp_path) < 3:
        assert process.poll() is None, f"farm test exited early: {process.returncode}"
        assert time.monotonic() < deadline, "never saw 3 completed runs"
        time.sleep(0.05)


def _recorder_of(process: subprocess.Popen[bytes]) -> psutil.Process:
    found = [c for c in psutil.Process(process.pid).children() if "farm.history.recorder" in c.cmdline()]
    assert len(found) == 1, [c.cmdline() for c in psutil.Process(process.pid).children()]
    return found[0]


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE  # exited; its new parent has not reaped it
    except psutil.NoSuchProcess:
        return True


def _sweeps(history: str) -> list[str]:
    store = HistoryStore.open(history)
    try:
        return [s.status for s in store.sweeps()]
    finally:
        store.close()


def test_a_ctrl_c_to_the_terminal_still_records_what_ran(tmp_path: Path, history_url: str) -> None:
    process = _start(tmp_path, history_url)
    _wait_for_runs(process, tmp_path)
    recorder = _recorder_of(process)
    assert history_url not in " ".join(recorder.cmdline())  # the URL goes through a pipe, never argv
    assert recorder.status() != psutil.STATUS_ZOMBIE
    os.killpg(process.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    _, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 130, err.decode()
    assert b"history not recorded" not in err
    assert _sweeps(history_url) == ["stopped"]
    assert _gone(recorder)


def test_a_killed_farm_test_records_nothing_and_leaves_no_recorder(tmp_path: Path, history_url: str) -> None:
    process = _start(tmp_path, history_url)
    _wait_for_runs(process, tmp_path)
    recorder = _recorder_of(process)
    process.kill()
    process.wait(timeout=WAIT_S)
    deadline = time.monotonic() + WAIT_S
    while not _gone(recorder):  # its stdin closed with its parent: it exits without a report
        assert time.monotonic() < deadline, "the recorder outlived the killed farm test"
        time.sleep(0.05)
    assert _sweeps(history_url) == []


def test_a_recorder_that_cannot_run_leaves_the_recording_to_farm_test(tmp_path: Path, history_url: str) -> None:
    """A recorder process that dies at once (here: its interpreter's start-up exits; in life, a frozen
    farm whose executable takes no ``-m``): the sweep is recorded in-process, without a warning."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\nif 'farm.history.recorder' in sys.orig_argv:\n    os._exit(7)\n")
    suite = tmp_path / "ok.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x", "expected": "done"}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "FARM_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", str(suite), "-n", AGENT, "--no-progress",
                           "-o", str(tmp_path / "r.json"), "--history", history_url], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    assert "history not recorded" not in done.stderr
    assert _sweeps(history_url) == ["complete"]
