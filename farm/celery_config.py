"""Celery settings of the farm, from the environment (lowercase names; ``workers.config`` re-exports them).

The submitter builds the same settings with ``celery_settings(broker_url)``, so both sides
agree on serialisation, queues and the broker's redelivery window.

Environment:
    FARM_BROKER_URL          broker (default redis://localhost:6379/0)
    FARM_RESULT_BACKEND      result backend (default: the broker)
    FARM_QUEUE               default queue (default ``farm``)
    FARM_VISIBILITY_TIMEOUT  seconds before Redis redelivers a run whose worker died (default 360)
    FARM_RESULT_TTL          seconds results and reports stay retrievable (default 7 days)
    FARM_NIGHTLY_SUITE       suite the beat scheduler runs every night (unset: no schedule)
    FARM_NIGHTLY_CRON        its schedule, five cron fields (default ``0 2 * * *``)
    FARM_NIGHTLY_ARGS        extra ``farm test`` flags for it (default ``--runs 10``)
    FARM_TASK_EVENTS         1: send Celery task events (Flower); default off (``farm worker --events``)

Task events and the STARTED state are off by default: they cost the worker about a quarter of
its CPU per run (benchmarks/README.md, §1), and the farm's own event stream already reports
every run. Flower turns events on in running workers by broadcast while it watches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from farm.errors import SettingsError
from farm.execute import DEFAULT_CASE_TIMEOUT_S
from farm.redis_keys import result_ttl
from farm.yaofile import positive_int_env

DEFAULT_BROKER_URL = "redis://localhost:6379/0"
DEFAULT_QUEUE = "farm"
DEFAULT_VISIBILITY_TIMEOUT_S = int(DEFAULT_CASE_TIMEOUT_S) + 60
"""The default case timeout plus a minute (SPEC 9): a dead worker's runs come back by then."""
DEFAULT_NIGHTLY_CRON = "0 2 * * *"


def visibility_timeout(env: Mapping[str, str] | None = None) -> int:
    """FARM_VISIBILITY_TIMEOUT in seconds (default: case timeout + 60 s)."""
    return positive_int_env("FARM_VISIBILITY_TIMEOUT", DEFAULT_VISIBILITY_TIMEOUT_S, env)


def transport_options(vt: int) -> dict[str, Any]:
    # kombu scans for expired unacked messages every interval × throttle seconds (100 s by
    # default); scan every ≤10 s so a dead worker's runs return soon after the timeout.
    return {
        "visibility_timeout": vt,
        "unacked_restore_interval": max(1, min(10, vt // 4)),
        "unacked_restore_throttle": 1,
        "socket_connect_timeout": 5,
        "socket_timeout": 30,
        "retry_on_timeout": True,
    }


def parse_cron(expr: str) -> Any:
    """Five cron fields (minute hour day-of-month month day-of-week) → a Celery crontab."""
    from celery.schedules import crontab  # Celery only where a schedule is built: the CLI stays light

    fields = expr.split()
    if len(fields) != 5:
        raise SettingsError(f"FARM_NIGHTLY_CRON={expr!r}: expected 5 fields (minute hour dom month dow)")
    minute, hour, dom, month, dow = fields
    try:
        return crontab(minute=minute, hour=hour, day_of_month=dom, month_of_year=month, day_of_week=dow)
    except ValueError as exc:
        raise SettingsError(f"FARM_NIGHTLY_CRON={expr!r}: {exc}") from None


def beat_schedule(env: Mapping[str, str]) -> dict[str, Any]:
    """A nightly ``farm.nightly`` entry when FARM_NIGHTLY_SUITE is set; else nothing."""
    suite = env.get("FARM_NIGHTLY_SUITE")
    if not suite:
        return {}
    cron = parse_cron(env.get("FARM_NIGHTLY_CRON") or DEFAULT_NIGHTLY_CRON)
    return {"farm-nightly": {"task": "farm.nightly", "schedule": cron, "args": (suite,)}}


def task_events(env: Mapping[str, str] | None = None) -> bool:
    """FARM_TASK_EVENTS: send Celery task events (for Flower)? Off unless 1/true/yes/on."""
    raw = (os.environ if env is None else env).get("FARM_TASK_EVENTS", "")
    return raw.strip().lower() in ("1", "true", "yes", "on")


def celery_settings(broker_url: str | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every Celery setting of the farm; ``broker_url`` overrides FARM_BROKER_URL."""
    env = os.environ if env is None else env
    broker = broker_url or env.get("FARM_BROKER_URL") or DEFAULT_BROKER_URL
    vt = visibility_timeout(env)
    events = task_events(env)
    return {
        "broker_url": broker,
        "result_backend": env.get("FARM_RESULT_BACKEND") or broker,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # One reserved message per thread: a worker never hoards runs another could start.
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": transport_options(vt),
        "result_backend_transport_options": {"retry_policy": {"timeout": 30.0}},
        "broker_connection_retry_on_startup": True,
        "result_expires": result_ttl(),
        "task_default_queue": env.get("FARM_QUEUE") or DEFAULT_QUEUE,
        "task_track_started": False,  # the farm's stream shows runs as they land
        "worker_send_task_events": events,
        "task_send_sent_event": events,
        "timezone": "UTC",
        "enable_utc": True,
        "beat_schedule": beat_schedule(env),
    }

