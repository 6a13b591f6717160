"""The farm's Celery settings, re-exported for ``config_from_object``-style use and old imports.

They live in ``farm.distributed.broker.celery_config`` so that the submitter (``farm``) never imports ``workers``.
"""

from farm.distributed.broker.celery_config import (
    DEFAULT_BROKER_URL,
    DEFAULT_NIGHTLY_CRON,
    DEFAULT_QUEUE,
    DEFAULT_VISIBILITY_TIMEOUT_S,
    beat_schedule,
    celery_settings,
    parse_cron,
    result_backend,
    task_events,
    transport_options,
    visibility_timeout,
)

__all__ = [
    "DEFAULT_BROKER_URL",
    "DEFAULT_NIGHTLY_CRON",
    "DEFAULT_QUEUE",
    "DEFAULT_VISIBILITY_TIMEOUT_S",
    "beat_schedule",
    "celery_settings",
    "parse_cron",
    "result_backend",
    "task_events",
    "transport_options",
    "visibility_timeout",
]
