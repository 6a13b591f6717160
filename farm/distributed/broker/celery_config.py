"""Celery settings of the farm (lowercase names), built from ``FarmSettings``.

The submitter and the workers build the same settings with ``celery_settings(settings)``, so
both sides agree on serialisation, queues and the broker's redelivery window. ``workers.config``
re-exports this module; Celery itself is imported only where a schedule is built.

Task events and the STARTED state are off by default: they cost the worker about a quarter of
its CPU per run (the `--events` row of benchmarks/README.md), and the farm's own event stream already reports
every run. Flower turns events on in running workers by broadcast while it watches.

Nightly schedule (beat): FARM_NIGHTLY_SUITE (unset: none), FARM_NIGHTLY_CRON (five cron fields,
default ``0 2 * * *``, UTC), FARM_NIGHTLY_ARGS (extra ``farm test`` flags, default ``--runs 10``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from farm.errors import SettingsError
from farm.settings import (
    DEFAULT_BROKER_URL,
    DEFAULT_QUEUE,
    DEFAULT_VISIBILITY_TIMEOUT_S,
    FarmSettings,
    is_redis_url,
)

DEFAULT_NIGHTLY_CRON = "0 2 * * *"
REDIS_TRANSPORT = "farm.distributed.broker.transport:Transport"
"""kombu's Redis transport with one client per channel (``farm.distributed.broker.transport``), for ``redis://``."""


def visibility_timeout(env: Mapping[str, str] | None = None) -> int:
    """FARM_VISIBILITY_TIMEOUT in seconds (default: case timeout + 60 s)."""
    return FarmSettings.from_env(env).visibility_timeout_s


def transport_options(vt: int, broker_url: str | None = None) -> dict[str, Any]:
    """Kombu's transport options: the Redis transport's redelivery window; none for RabbitMQ.

    RabbitMQ needs no visibility timeout: it redelivers a consumer's unacknowledged messages the
    moment that consumer's connection closes (a SIGKILLed worker's included).
    """
    if broker_url is not None and not is_redis_url(broker_url):
        return {}
    # kombu scans for expired unacked messages every interval × throttle seconds (100 s by
    # default); scan every ≤10 s so a dead worker's runs return soon after the timeout.
    return {
        "visibility_timeout": vt,
        "unacked_restore_interval": max(1, min(10, vt // 4)),
        "unacked_restore_throttle": 1,
        "socket_connect_timeout": 5,
        "socket_timeout": 30,
        # no retry_on_timeout: kombu (5.7) pipelines a producer's batch of messages only when
        # no command is replayed on a timeout; with it, every message was its own round trip
        # and a new client (10,000 messages: 6 s instead of 0.6 s). A timed-out command is a
        # lost connection to kombu, which reconnects.
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
    return FarmSettings.from_env(env).task_events


def result_backend(settings: FarmSettings) -> str:
    """FARM_RESULT_BACKEND, else the broker when it is Redis, else the farm's store (Redis).

    Celery 5 has no AMQP result backend: with a RabbitMQ broker, results go to the store, and a
    RabbitMQ broker without FARM_STORE_URL is a SettingsError (exit 2) here, at start-up.
    """
    if settings.result_backend:
        return settings.result_backend
    return settings.broker_url if is_redis_url(settings.broker_url) else settings.store_url


def celery_settings(settings: FarmSettings | str | None = None, env: Mapping[str, str] | None = None
                    ) -> dict[str, Any]:
    """Every Celery setting of the farm; a string is a broker URL overriding FARM_BROKER_URL."""
    env = os.environ if env is None else env
    if not isinstance(settings, FarmSettings):
        settings = FarmSettings.from_env(env, broker_url=settings)
    events = settings.task_events
    return {
        "broker_url": settings.broker_url,
        **({"broker_transport": REDIS_TRANSPORT} if settings.broker_url.startswith("redis://") else {}),
        "result_backend": result_backend(settings),
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # One reserved message per thread: a worker never hoards runs another could start.
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": transport_options(settings.visibility_timeout_s, settings.broker_url),
        "result_backend_transport_options": {"retry_policy": {"timeout": 30.0}},
        "broker_connection_retry_on_startup": True,
        # Never exit on a Redis error: a full Redis (OOM) is a channel error, retried like a lost
        # connection, with Celery's backoff, for as long as it lasts (farm.distributed.store.memory).
        "broker_channel_error_retry": True,
        "broker_connection_max_retries": None,
        "result_expires": settings.result_ttl_s,
        "task_default_queue": settings.queue,
        "task_track_started": False,  # the farm's stream shows runs as they land
        "worker_send_task_events": events,
        "task_send_sent_event": events,
        "timezone": "UTC",
        "enable_utc": True,
        "beat_schedule": beat_schedule(env),
    }


__all__ = [
    "DEFAULT_BROKER_URL",
    "DEFAULT_NIGHTLY_CRON",
    "DEFAULT_QUEUE",
    "DEFAULT_VISIBILITY_TIMEOUT_S",
    "REDIS_TRANSPORT",
    "beat_schedule",
    "celery_settings",
    "parse_cron",
    "result_backend",
    "task_events",
    "transport_options",
    "visibility_timeout",
]
