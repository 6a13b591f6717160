"""A suite's load is shown while it lasts (``farm.cli.load_progress``): ``prepare_sweep`` tells
how many cases it read, batch by batch, in one process or several; ``farm test`` draws it on a
terminal, and only for a load that lasts."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from farm.api import TestSettings, prepare_sweep
from farm.api import prepare as sweep
from farm.cli.load_progress import LoadProgress
from farm.plan import load_processes

ROOT = Path(__file__).parents[2]
AGENT = "py:tests/agents/distributed.py:by_run"


def write_suite(path: Path, cases: int) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(cases):
            out.write(json.dumps({"id": f"C{i:06d}", "input": f"ping {i}"}) + "\n")
    return path


@pytest.mark.parametrize("processes", ["1", "2"])
def test_prepare_tells_each_batch_read_until_every_case_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: str
) -> None:
    monkeypatch.setattr(sweep, "PLAN_BATCH", 4)
    monkeypatch.setattr(load_processes, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("FARM_LOAD_PROCESSES", processes)
    suite = write_suite(tmp_path / "s.jsonl", 18)
    told: list[int] = []
    prepared = prepare_sweep(TestSettings(input=str(suite), name=AGENT, collect_only=True), read=told.append)
    assert told == [4, 4, 4, 4, 2]  # one call a batch, in order, summing to every case read
    assert prepared.plan.total_cases == 18


def test_the_load_line_counts_the_cases_and_is_gone_when_the_load_ends() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with LoadProgress(console, show_after_s=0) as read:
        read(10_000)
        read(2_500)
    drawn = out.getvalue()
    assert "reading the suite: 12,500 cases, 0 s" in drawn
    assert drawn.rstrip().endswith("\x1b[2K")  # transient: the last thing drawn erases the line


def test_a_short_load_draws_nothing() -> None:
    out = io.StringIO()
    with LoadProgress(Console(file=out, force_terminal=True), show_after_s=60) as read:
        read(10_000)
    assert out.getvalue() == ""


def collect_on_a_terminal(suite: Path, listing: Path, *flags: str) -> tuple[int, str]:
    """``farm test --collect-only`` of ``suite`` with stderr on a pty (a real terminal) and stdout
    into ``listing``: its exit code and everything it drew on the terminal."""
    main, side = pty.openpty()
    # the line from the first batch on: how long 60,000 cases take to load depends on the machine
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "100", "FARM_LOAD_PROCESSES": "1", "FARM_LOAD_PROGRESS_AFTER": "0"}
    with listing.open("wb") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "farm", "test", "-i", str(suite), "-n", AGENT,
                                 "--collect-only", *flags], stdout=stdout, stderr=side, stdin=subprocess.DEVNULL,
                                cwd=ROOT, env=env)
    os.close(side)
    seen = b""
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the process closed its end
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=120)
    finally:
        os.close(main)
    return proc.returncode, seen.decode("utf-8", "replace")


def test_farm_test_shows_a_long_load_on_its_terminal(tmp_path: Path) -> None:
    # a long load (the line drawn from its first batch): it must appear on stderr, a real terminal
    # (a pty); stdout, a file, gets the ids alone.
    suite = write_suite(tmp_path / "big.jsonl", 60_000)
    listing = tmp_path / "ids.txt"
    code, terminal = collect_on_a_terminal(suite, listing)
    assert code == 0, terminal
    assert "reading the suite: 60,000 cases, " in terminal
    assert "reading the suite: 0 cases" not in terminal and "reading the suite:  cases" not in terminal
    assert "collected 60000 cases (60000 runs)" in terminal
    assert listing.read_text().split() == [f"C{i:06d}" for i in range(60_000)]


def test_no_progress_draws_no_load_line(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "big.jsonl", 60_000)
    code, terminal = collect_on_a_terminal(suite, tmp_path / "ids.txt", "--no-progress")
    assert code == 0, terminal
    assert "collected 60000 cases" in terminal and "reading the suite" not in terminal
