"""The in-process executor starts its workers one at a time (``farm.sweep.local``): each
worker's first run gets up to its first wait before the next worker starts, so the loop serves
the first run's I/O (an HTTP agent: its request goes out) while the others are still being made.
The cap on runs in flight is ``--parallel`` all the same."""

from __future__ import annotations

import json
from pathlib import Path

from farm import TestSettings, run_sweep

# Each call schedules a mark on the loop (as a socket's completion would be) and records how many
# marks the loop had run when the call began.
MARKING_AGENT = '''
import asyncio, json, os

MARKS = []
LOG = os.path.join(os.path.dirname(__file__), "starts.jsonl")


async def respond(messages, context):
    seen = len(MARKS)
    asyncio.get_running_loop().call_soon(MARKS.append, context.case_id)
    with open(LOG, "a") as log:
        log.write(json.dumps({"case": context.case_id, "seen": seen}) + "\\n")
    await asyncio.sleep(0.2)
    return "ok"
'''

# Every call waits until ``WANTED`` calls are in flight together, or gives up after 20 s.
MEETING_AGENT = '''
import asyncio

WANTED = 12
_in_flight = 0
_met = None


async def respond(messages, context):
    global _in_flight, _met
    _met = _met or asyncio.Event()
    _in_flight += 1
    if _in_flight >= WANTED:
        _met.set()
    try:
        await asyncio.wait_for(_met.wait(), 20)
        return "met"
    except TimeoutError:
        return "alone"
'''


def suite(tmp_path: Path, cases: int, check: str) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i:02d}", "input": "x", "assert": {"type": "contains",
                                                                                   "value": check}}) + "\n"
                            for i in range(cases)), encoding="utf-8")
    return path


def test_each_worker_starts_once_the_loop_has_served_the_previous_ones_first_run(tmp_path: Path) -> None:
    (tmp_path / "marking.py").write_text(MARKING_AGENT, encoding="utf-8")
    report = run_sweep(TestSettings(input=str(suite(tmp_path, 10, "ok")), name=f"py:{tmp_path}/marking.py:respond",
                                    parallel=10, cwd=str(tmp_path)))
    assert report.summary.by_status["passed"] == 10
    starts = [json.loads(line) for line in (tmp_path / "starts.jsonl").read_text().splitlines()]
    # Started all at once, every call began before the loop ran any mark: seen 0 for all ten.
    assert [s["seen"] for s in starts] == list(range(10))
    assert [s["case"] for s in starts] == [f"c{i:02d}" for i in range(10)]


def test_every_worker_is_still_in_flight_at_once(tmp_path: Path) -> None:
    (tmp_path / "meeting.py").write_text(MEETING_AGENT, encoding="utf-8")
    report = run_sweep(TestSettings(input=str(suite(tmp_path, 12, "met")), name=f"py:{tmp_path}/meeting.py:respond",
                                    parallel=12, cwd=str(tmp_path)))
    assert report.summary.by_status["passed"] == 12


def test_a_parallel_far_above_the_runs_starts_no_worker_per_slot(tmp_path: Path) -> None:
    # Workers stop being started once one finds no run left: --parallel 10**9 on three runs ends
    # at once (a worker per slot would take hours, and the global test timeout fails it).
    (tmp_path / "marking.py").write_text(MARKING_AGENT, encoding="utf-8")
    report = run_sweep(TestSettings(input=str(suite(tmp_path, 3, "ok")), name=f"py:{tmp_path}/marking.py:respond",
                                    parallel=10**9, cwd=str(tmp_path)))
    assert report.summary.by_status["passed"] == 3
