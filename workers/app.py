"""The farm's Celery application: ``celery -A workers.app worker`` (or ``farm worker``).

Settings are resolved once, here, from the environment (``farm.settings.FarmSettings``): set
FARM_BROKER_URL rather than Celery's ``-b``, so the result backend and the farm's data store
follow the same broker. With RabbitMQ (``amqp://``) the broker carries only messages: the
sweeps, and Celery's results, live in the Redis named by FARM_STORE_URL.
"""

from __future__ import annotations

from celery import Celery

from farm.distributed.broker.celery_config import celery_settings
from farm.settings import FarmSettings

SETTINGS = FarmSettings.from_env()
"""This worker process's settings (queue, timeouts, store URL, result TTL)."""

app = Celery("farm", include=["workers.tasks"])
app.conf.update(celery_settings(SETTINGS))

__all__ = ["SETTINGS", "app"]
