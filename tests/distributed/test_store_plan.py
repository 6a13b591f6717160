"""A plan stored the way a big one is: in batches flushed as they fill (``farm.distributed.store.plans``).

A sweep of 10,000 cases and more is flushed to Redis every 20 chunks so the submitter's buffer
stays bounded; here the chunk is 2 cases, so 101 cases cross that path three times and end with
a short tail, against a real redis-server.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from farm.api import TestSettings, prepare_sweep
from farm.distributed.store.sweep_store import SweepStore, connect
from farm.models import SweepStart
from farm.plan.compact_cases import CompactCases

pytestmark = [pytest.mark.redis]

AGENT = "py:tests/agents/distributed.py:by_run"


def write_suite(path: Path, cases: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"C{i:03d}", "input": f"ping {i}", "timeout": 5 + i % 7,
                                        "assert": {"type": "contains", "value": "ok"}}) + "\n"
                            for i in range(cases)), encoding="utf-8")
    return path


def test_a_distributed_submitter_holds_its_cases_in_their_stored_form(tmp_path: Path, redis_server: str) -> None:
    """The same suite planned in-process (models) and for workers (``CompactCases``): the same
    cases, ids, index and totals; the compact plan's cases are what the store will hold."""
    suite = write_suite(tmp_path / "s.jsonl", 30)
    local = prepare_sweep(TestSettings(input=str(suite), name=AGENT, runs=2), sweep_id="same").plan
    remote = prepare_sweep(TestSettings(input=str(suite), name=AGENT, runs=2, broker=redis_server),
                           sweep_id="same").plan
    assert isinstance(remote.cases, CompactCases) and isinstance(local.cases, list)
    assert [c.model_dump() for c in remote.cases] == [c.model_dump() for c in local.cases]
    assert remote.case_ids == local.case_ids and list(remote.slots()) == list(local.slots())
    assert (remote.total_cases, remote.total_runs, remote.max_case_timeout_s) == (30, 60, 11.0)
    assert remote.model_dump() == local.model_dump()
    assert len(remote.cases.stored[1]) < len(local.cases[1].model_dump_json()) / 4  # deflated with the first


def test_a_plan_stored_in_flushed_batches_reads_back_whole_and_every_key_expires(
        tmp_path: Path, redis_client: Any, redis_server: str) -> None:
    suite = write_suite(tmp_path / "big.jsonl", 101)
    plan = prepare_sweep(TestSettings(input=str(suite), name=AGENT, runs=3, broker=redis_server)).plan
    store = SweepStore(connect(redis_server), ttl=600)
    store.save_sweep(plan, time.time(), chunk=2)  # flushed after cases 40, 80; 21 more at the end
    sid = plan.sweep_id
    assert store.case_ids(sid) == plan.case_ids and len(plan.case_ids) == 101
    assert store.plan_slots(sid) == list(plan.slots())
    assert [c.model_dump() for c in store.load_cases(sid, plan.case_ids)] == [c.model_dump() for c in plan.cases]
    assert store.load_sweep(sid) is not None and store.cursor(sid) == 0
    stored = redis_client.keys(f"*{sid}*")
    assert len(stored) >= 5, stored  # sweep, cases, index, stream, cursor (and the activity mark)
    assert all(0 < redis_client.ttl(key) <= 600 for key in stored), {k: redis_client.ttl(k) for k in stored}


def test_the_start_event_crosses_redis_as_the_model_and_reads_back_equal(tmp_path: Path, redis_server: str) -> None:
    """The submitter streams ``SweepStart`` as the model's JSON; the follower validates it with the
    model's own JSON validation (``farm.distributed.submit``): the same event comes back."""
    suite = write_suite(tmp_path / "s.jsonl", 3)
    plan = prepare_sweep(TestSettings(input=str(suite), name=AGENT, runs=2, broker=redis_server)).plan
    store = SweepStore(connect(redis_server), ttl=600)
    store.save_sweep(plan, time.time())
    first = store.read_events(plan.sweep_id, "0-0", block_ms=None)[0]
    assert first.type == "start" and first.data is not None
    assert SweepStart.model_validate_json(first.data) == SweepStart(
        sweep_id=plan.sweep_id, agent_id=plan.agent_label, total_cases=3, total_runs=6, timestamp=plan.started_at)
    assert json.loads(first.data) == {"sweep_id": plan.sweep_id, "agent_id": plan.agent_label, "total_cases": 3,
                                      "total_runs": 6, "timestamp": plan.started_at}  # the keys it always had


def test_a_compact_case_is_the_json_of_its_planned_case_byte_for_byte(tmp_path: Path, redis_server: str) -> None:
    """A compact plan encodes a case without building its ``PlannedCase``: what it stores inflates
    to that model's own JSON, skipped cases (a plan of their own) among the rest."""
    suite = tmp_path / "mixed.jsonl"
    suite.write_text("".join(json.dumps({"id": f"M{i}", "input": f"ping {i}", "timeout": 3 + i % 4,
                                         **({"skip": True} if i % 5 == 2 else {}),
                                         "assert": {"type": "contains", "value": "ok"}}) + "\n"
                             for i in range(25)), encoding="utf-8")
    local = prepare_sweep(TestSettings(input=str(suite), name=AGENT), sweep_id="same").plan
    remote = prepare_sweep(TestSettings(input=str(suite), name=AGENT, broker=redis_server), sweep_id="same").plan
    assert list(remote.cases.json_texts()) == [c.model_dump_json() for c in local.cases]
    assert list(remote.slots()) == list(local.slots())
