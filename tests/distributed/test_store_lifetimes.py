"""What the store's fewer commands must not cost (issue 32's review): the keys a report is read
with live as long as the report, an old Redis is refused before a sweep starts, and the publish
cursor moves before the runs go, so a publisher's successor never sends a run a second time as a
first delivery (whose worker would call the agent without asking whether it is stored)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from farm.api import TestSettings, prepare_sweep
from farm.distributed.store import keys
from farm.distributed.store.sweep_store import SweepStore, connect, too_old
from tests.support.browser_fixtures import case_stats, run, sweep_report

AGENT = "py:tests/agents/distributed.py:by_run"


def test_redis_older_than_six_two_is_too_old() -> None:
    assert [too_old(v) for v in ("5.0.7", "6.0.16", "6.2.0", "6.2.14", "7.0.15", "8.0-m02", "10.0.0")] == [
        True, True, False, False, False, False, False]


@pytest.mark.redis
def test_the_store_accepts_this_machines_redis(redis_server: str) -> None:
    store = SweepStore(connect(redis_server), ttl=600)
    store.require_version()  # the private redis-server the tests run is 6.2 or later
    version = store.client.info("server")["redis_version"]
    assert not too_old(str(version))


@pytest.mark.redis
def test_a_stored_report_keeps_the_stats_it_is_read_with_for_its_own_lifetime(
        tmp_path: Path, redis_client: Any, redis_server: str) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "C1", "input": "ping", "assert": {"type": "contains", "value": "ok"}}) + "\n",
                     encoding="utf-8")
    plan = prepare_sweep(TestSettings(input=str(suite), name=AGENT, runs=1, broker=redis_server)).plan
    early = SweepStore(connect(redis_server), ttl=100)
    early.save_sweep(plan, time.time())
    sid = plan.sweep_id
    stats = case_stats("C1", [run(1, "passed")])
    early.store_case(sid, "C1", stats)
    assert 0 < redis_client.ttl(keys.stats_key(sid)) <= 100  # set once, early, with the plan
    late = SweepStore(connect(redis_server), ttl=5000)  # a report stored long after: its TTL counts
    assert late.store_report(sid, sweep_report([stats], sweep_id=sid))
    for key in (keys.report_key(sid), keys.stats_key(sid), keys.cases_done_key(sid), keys.stream_key(sid)):
        assert 4000 < redis_client.ttl(key) <= 5000, key
    assert late.get_report(sid) is not None


@pytest.mark.redis
def test_the_cursor_moves_before_a_batch_is_sent(tmp_path: Path, redis_client: Any, redis_server: str) -> None:
    """A publisher that dies between the two leaves runs counted as published, never runs sent
    beyond the cursor: its successor starts after them (the reconciler's repair sends them again,
    marked ``again``). Watched with MONITOR: the cursor's script runs before the batch's LPUSH."""
    from farm.distributed.delivery.publish import Outcome, ordered_slots, publish_from_cursor
    from farm.distributed.submit import create_celery_app
    from farm.settings import FarmSettings
    from tests.support.redis_commands import Monitor

    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": f"C{i}", "input": "ping", "assert": {"type": "contains",
                                                                                      "value": "ok"}}) + "\n"
                             for i in range(3)), encoding="utf-8")
    settings = TestSettings(input=str(suite), name=AGENT, runs=2, broker=redis_server)
    plan = prepare_sweep(settings).plan
    store = SweepStore(connect(redis_server), ttl=600)
    store.save_sweep(plan, time.time())
    sid = plan.sweep_id
    app = create_celery_app(FarmSettings.from_env({}, broker_url=redis_server))
    monitor = Monitor(redis_server)
    try:
        token = "t"
        assert store.claim_lease(keys.publisher_key(sid), token, 10_000)
        outcome = publish_from_cursor(app, store, plan, ordered_slots(store, plan), token=token,
                                      lease_ms=10_000, batch=100)
    finally:
        monitor.stop()
    assert outcome is Outcome.DONE and store.cursor(sid) == 6
    order = [name for name in monitor.order if name in {"evalsha", "lpush"}]
    assert "lpush" in order and "evalsha" in order
    assert order.index("evalsha") < order.index("lpush"), order


@pytest.mark.redis
def test_a_stop_is_seen_at_once_where_it_was_set_and_after_the_read_interval_elsewhere(
        redis_server: str) -> None:
    """The stop key is read at most every ``STOP_FRESH_S`` per process (issue 32); the process
    that stops a sweep sees it at its next run, another one after that interval at the latest."""
    from farm.distributed.store.sweep_store import STOP_FRESH_S

    here, elsewhere = SweepStore(connect(redis_server), ttl=600), SweepStore(connect(redis_server), ttl=600)
    assert elsewhere.begin_run("S1", "C1", 1, "h").stop is None  # read now: not stopped
    assert here.stop("S1", "cancel")
    assert here.begin_run("S1", "C1", 2, "h").stop == "cancel"
    time.sleep(STOP_FRESH_S + 0.05)
    assert elsewhere.begin_run("S1", "C1", 3, "h").stop == "cancel"
    assert not elsewhere.stop("S1", "fail-fast")  # stopped already: the first reason stays
    assert elsewhere.begin_run("S1", "C1", 4, "h").stop == "cancel"


@pytest.mark.redis
def test_every_delivery_asks_whether_its_run_is_stored(redis_server: str) -> None:
    """A first delivery too (it once did not, and a run published twice was paid twice)."""
    from farm.models import RunResult, RunStatus

    store = SweepStore(connect(redis_server), ttl=600)
    assert not store.begin_run("S2", "C1", 1, "h").stored
    store.store_run("S2", RunResult(sweep_id="S2", case_id="C1", run=1, status=RunStatus.PASSED), runs=1)
    assert store.begin_run("S2", "C1", 1, "h").stored
    assert store.begin_run("S2", "C1", 1, "other").stored
    assert store.running("S2") == {}  # a stored run is not marked in flight again
