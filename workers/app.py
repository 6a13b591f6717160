"""The farm's Celery application: ``celery -A workers.app worker`` (or ``farm worker``).

Settings come from the environment (``workers.config``): set FARM_BROKER_URL rather than
Celery's ``-b``, so the result backend and the farm's data store follow the same broker.
"""

from __future__ import annotations

from celery import Celery

from farm.celery_config import celery_settings

app = Celery("farm", include=["workers.tasks"])
app.conf.update(celery_settings())

__all__ = ["app"]
