"""How many messages wait in the farm's queues, asked of the broker itself (Redis or RabbitMQ), and
which workers consume a queue (``consumers``: Celery's inspect).

``farm status`` used to read a queue's length with Redis's ``LLEN`` on the store, which is only
right when the broker is that same Redis. A passive ``queue_declare`` asks whichever broker the
app uses: kombu's Redis transport answers with the list's length, RabbitMQ with the queue's
ready messages (those delivered but unacknowledged are not counted by either). A queue that
does not exist (never declared, or a Redis list emptied) has nothing waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("farm.queues")


def waiting_messages(app: Any, names: Iterable[str]) -> dict[str, int]:
    """``{queue: messages waiting}`` for each name, read from the app's broker."""
    counts: dict[str, int] = {}
    with app.connection_for_read() as connection:
        connection.ensure_connection(max_retries=1)
        for name in sorted(set(names)):
            counts[name] = _waiting(connection, name)
    return counts


def _waiting(connection: Any, name: str) -> int:
    channel = connection.channel()
    try:
        return int(channel.queue_declare(queue=name, passive=True).message_count)
    except connection.channel_errors:  # no such queue (RabbitMQ closes this channel; a new one is taken next)
        return 0
    finally:
        try:
            channel.close()
        except Exception:  # a channel the broker already closed
            log.debug("closing the channel of queue %s", name, exc_info=True)


def delete_empty_queue(app: Any, name: str) -> None:
    """Delete queue ``name`` unless messages wait in it: a finished sweep's own queue
    (``farm test --own-queue``). Celery declares such a queue with a direct exchange of its name;
    kombu's Redis transport keeps its bindings in sets with no expiry and RabbitMQ keeps the queue
    itself, so one left behind per sweep would pile up. Declared first, so the channel knows the
    bindings it deletes."""
    from kombu.entity import Exchange, Queue

    with app.connection_for_write() as connection:
        exchange: Any = Exchange(name, type="direct")  # type: ignore[no-untyped-call]
        queue: Any = Queue(name, exchange, routing_key=name)  # type: ignore[no-untyped-call]
        bound = queue.bind(connection.default_channel)
        bound.declare()
        bound.delete(if_empty=True)



def consumers(app: Any, queue: str, *, timeout: float = 1.0) -> list[str]:
    """Names of the workers consuming ``queue`` (empty when none answers within ``timeout``)."""
    try:
        replies = app.control.inspect(timeout=timeout).active_queues() or {}
    except Exception as exc:  # a broker hiccup is not "no worker": the stream read will tell
        log.debug("inspect failed: %s", exc)
        return ["?"]
    return sorted(name for name, queues in replies.items() if any(q.get("name") == queue for q in queues or []))


__all__ = ["consumers", "delete_empty_queue", "waiting_messages"]
