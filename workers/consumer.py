"""The worker's Celery consumer: Celery's own, surviving one teardown bug of a flapping broker.

Celery 5.7 tears a lost broker connection down twice: ``connection.collect()``, then
``connection.close()``. When Redis comes back while the first pass drains a pending BRPOP, that
pass can time out after it has released the transport but before it closed the channel; the
second pass then closes the channel, kombu restores its unacknowledged messages through a
transport with no client and raises ``AttributeError``, which Celery treats as unrecoverable:
the worker stopped because Redis restarted (seen 1 time in about 20 Redis restarts mid-sweep).

The connection is dead either way, and its unacknowledged messages stay in Redis's unacked hash,
restored after the visibility timeout (and the farm's reconciler republishes what is still
missing), so the error is logged and the consumer reconnects as it does after any loss.
"""

from __future__ import annotations

import logging

from celery.worker.consumer import Consumer as CeleryConsumer

log = logging.getLogger("farm.worker")


class Consumer(CeleryConsumer):  # type: ignore[misc]  # Celery ships no type hints
    """Celery's consumer; a dead connection's teardown error does not stop the worker."""

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        try:
            super().on_connection_error_after_connected(exc)
        except AttributeError:  # the second teardown of a released transport (module docstring)
            log.warning("closing the lost broker connection failed (a known Celery teardown error); "
                        "reconnecting anyway", exc_info=True)


__all__ = ["Consumer"]
