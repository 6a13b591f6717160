"""kombu's Redis transport: one client per channel, messages reserved, acknowledged and published in batches.

Changes to kombu's (5.7) Redis channel, measured on a farm worker; everything else is kombu's.
Besides the two below, acknowledgements leave Redis together (``QoS.ack``) and a producer batch's
messages onto one queue go in one ``LPUSH`` (``PublishBatch``): bench_store.py counts the commands.

**One client per channel.** kombu built a new ``redis.Redis`` client, whose constructor copies
redis-py's response callbacks (about 200) into a case-insensitive dict, each time a worker
reserved a message (``QoS.append``) and each time it acknowledged one (``QoS.ack``): 7.6 % of a
farm worker's time holding the GIL at 300 runs/s (py-spy ``--gil``, 2026-11-23). A redis-py client
may be shared between threads (it takes a connection from its pool for each command; a pipeline
is made per use), so each channel keeps one for its synchronous commands, made again when its pool
changes (kombu drops the pool when it reconnects).

**A batch per read.** kombu's consumer takes one message per ``BRPOP`` and records it unacked
with a second round trip, each in the worker's main thread, which waits for the GIL behind the
run threads after each: a worker started about 300 runs a second however many threads it had
(17–41 of 200 slots busy with 100 ms agents, 2026-11-23). Here, when ``BRPOP`` answers, one Lua
call records that message unacked and moves more of the same list into the same ``unacked`` hash
and index (kombu's own keys and format, so its visibility-timeout restore and ``restore_unacked``
see them); then each is delivered to the consumer in order. It takes no more than the prefetch
limit leaves room for, and no more than a quarter of what is left in the list (``SHARE``), so a
short queue is spread over the worker's processes and other workers: taking all the room gave a
queue of 50 CPU-bound runs whole to one process (2.74 s on one core instead of 1.67 s on two,
2026-11-24); a quarter, 1.78 s, split 116 / 134. (Dividing by the clients blocked waiting needs
``INFO``, which the compose file's ACL user may not run.) A long queue still fills the room in
one read. The batch leaves the list in one ``RPOP`` with a count and enters the hash and the index
in one ``HSET`` and one ``ZADD`` (Redis 6.2 or later): six commands a batch, not three a message.
A message is in the ``unacked`` hash before the consumer sees it, as with kombu; unlike
kombu's two round trips, no message is ever out of both the list and the hash. Queues consumed
without acknowledgements (Celery's reply queues) and key-prefixed channels keep kombu's
one-message read.

``farm.distributed.broker.celery_config.REDIS_TRANSPORT`` selects it for ``redis://`` brokers; ``rediss://``
(kombu reads its TLS defaults from the URL's scheme) and ``unix://`` keep kombu's own.
"""

from __future__ import annotations

import contextlib
import threading
from queue import Empty
from time import monotonic, time
from typing import Any

from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

from farm.distributed.store.lua import lua_script

ACK_BATCH = 64
"""Acknowledgements leave Redis together once this many wait (a read flushes the rest once the
oldest has waited ``ACK_WAIT_S``; close flushes all)."""
ACK_WAIT_S = 0.5
"""A read flushes the acknowledgements waiting only when the oldest has waited this long (at every
read, small reads cost two commands each: issue 32); an idle worker's poll returns within a
second or so, so none waits much longer."""
BATCH_MAX = 100
"""At most this many messages per read, whatever the prefetch limit (one read's work stays short)."""
SHARE = 4
"""A read takes at most 1/SHARE of what is left in the list after its first message."""

RESERVE_LUA = lua_script("farm.distributed.broker", "reserve.lua")
"""A batch reserved at once: the message BRPOP gave and a share of what is left (``SHARE``)."""


class QoS(kombu_redis.QoS):
    """kombu's Redis QoS; a message its channel already recorded unacked is not written again, and
    acknowledgements leave Redis in batches (``ACK_BATCH``, or at a read once the oldest waited
    ``ACK_WAIT_S``, or at close)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self.recorded: set[Any] = set()
        self._acked: list[Any] = []
        self._acked_lock = threading.Lock()
        self._oldest = 0.0

    def ack(self, delivery_tag: Any) -> None:
        """Acknowledged here at once (the prefetch room frees); its entry in kombu's unacked hash
        and index goes with the batch. A worker killed first leaves those entries: the messages
        come back after the visibility timeout, find their runs stored and count nothing again."""
        with self._acked_lock:
            if not self._acked:
                self._oldest = monotonic()
            self._acked.append(delivery_tag)
            virtual.QoS.ack(self, delivery_tag)  # type: ignore[no-untyped-call]
            full = len(self._acked) >= ACK_BATCH
        if full:
            self.flush_acks()

    def flush_due(self) -> bool:
        """Has the oldest acknowledgement waiting waited ``ACK_WAIT_S``?"""
        with self._acked_lock:
            return bool(self._acked) and monotonic() - self._oldest >= ACK_WAIT_S

    def flush_acks(self) -> None:
        """The batch's entries out of the unacked hash and index: two commands, one round trip, no
        transaction (MULTI/EXEC were two more commands a flush): cut off between them, an entry is
        left in the hash without its index entry, which kombu's restore never reads (never a
        message restored that was acked)."""
        with self._acked_lock:
            tags, self._acked = self._acked, []
        if not tags:
            return
        try:
            with self.channel.conn_or_acquire() as client:
                client.pipeline(transaction=False).zrem(self.unacked_index_key, *tags).hdel(
                    self.unacked_key, *tags).execute()
        except BaseException:
            with self._acked_lock:
                self._acked[:0] = tags  # the next flush tries again
            raise

    def append(self, message: Any, delivery_tag: Any) -> None:
        if delivery_tag in self.recorded:
            self.recorded.discard(delivery_tag)
            virtual.QoS.append(self, message, delivery_tag)  # type: ignore[no-untyped-call]
        else:
            super().append(message, delivery_tag)  # type: ignore[no-untyped-call]


class PublishBatch(kombu_redis.PublishBatch):
    """kombu's publish batch; consecutive ``LPUSH``es onto one list leave as one ``LPUSH`` of all
    their messages, in the same order (each goes to the head in turn): a published window of runs
    costs Redis one command, not one a run (bench_store.py)."""

    def flush(self) -> None:
        self.pipeline.command_stack[:] = merged_pushes(self.pipeline.command_stack)
        super().flush()  # type: ignore[no-untyped-call]


def merged_pushes(stack: list[tuple[tuple[Any, ...], dict[str, Any]]]) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """A pipeline's commands with each run of plain ``LPUSH``es onto one key made one ``LPUSH``."""
    merged: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for args, options in stack:
        if merged and _plain_push(args, options) and _plain_push(*merged[-1]) and merged[-1][0][1] == args[1]:
            merged[-1] = ((*merged[-1][0], *args[2:]), {})
        else:
            merged.append((args, options))
    return merged


def _plain_push(args: tuple[Any, ...], options: dict[str, Any]) -> bool:
    return not options and len(args) >= 3 and str(args[0]).upper() == "LPUSH"


class Channel(kombu_redis.Channel):
    QoS = QoS
    _shared_client: Any = None
    _reserve: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._no_ack_queues: set[str] = set()
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consumer's own client (BRPOP), made once by kombu
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        client = self._shared_client
        if client is None or client.connection_pool is not self.pool:
            client = self._shared_client = super()._create_client()  # type: ignore[no-untyped-call]
            self._reserve = client.register_script(RESERVE_LUA)
        return client

    def create_publish_batch(self, max_size: int) -> PublishBatch:
        return PublishBatch(self, max_size)  # type: ignore[no-untyped-call]

    def basic_consume(self, queue: str, *args: Any, **kwargs: Any) -> Any:
        no_ack = kwargs.get("no_ack", args[0] if args else False)
        (self._no_ack_queues.add if no_ack else self._no_ack_queues.discard)(queue)
        return super().basic_consume(queue, *args, **kwargs)  # type: ignore[no-untyped-call]

    def close(self) -> None:
        if not self.closed:
            # before kombu drops the pools; on failure they stay in the unacked hash: restored after
            # the visibility timeout, they find their runs stored and count nothing again
            self._flush_acks_quietly()
        super().close()  # type: ignore[no-untyped-call]

    def _brpop_read(self, **options: Any) -> bool:
        """kombu's ``_brpop_read``, taking a batch where the prefetch limit leaves room (and
        flushing the acknowledgements waiting once the oldest of them is due, so an idle worker
        holds none for long)."""
        if self.global_keyprefix:  # the shared client would prefix BRPOP's key again: kombu's read
            try:
                return super()._brpop_read(**options)  # type: ignore[no-any-return, no-untyped-call]
            finally:
                self._flush_acks_quietly()
        try:
            try:
                dest__item = self.client.parse_response(self.client.connection, "BRPOP", **options)
            except self.connection_errors:
                # a lost connection: disconnect so the next poll reconnects (as kombu does)
                self.client.connection.disconnect()
                raise
            if not dest__item:
                raise Empty()
            key, item = bytes_to_str(dest__item[0]), dest__item[1]  # type: ignore[no-untyped-call]
            dest = key.rsplit(self.sep, 1)[0]
            self._queue_cycle.rotate(dest)
            if dest in self._no_ack_queues:
                self.connection._deliver(_payload(item), dest)  # kombu's read: nothing to record
                return True
            payloads = [_payload(raw) for raw in [item, *self._reserve_more(key, item)]]
            self.qos.recorded.update(p["properties"]["delivery_tag"] for p in payloads)
            for n, payload in enumerate(payloads):
                try:
                    self.connection._deliver(payload, dest)
                except BaseException:
                    self._give_back(payloads[n + 1:])
                    raise
            return True
        finally:
            self._in_poll = None  # type: ignore[assignment]
            self._flush_brpop_reauth()  # type: ignore[no-untyped-call]
            if self.qos.flush_due():
                self._flush_acks_quietly()

    def _flush_acks_quietly(self) -> None:
        with contextlib.suppress(*self.connection_errors):  # kept for the next read
            self.qos.flush_acks()

    def _reserve_more(self, key: str, item: bytes) -> list[bytes]:
        """Record ``item`` unacked and move up to the room left more of ``key`` beside it, at once."""
        room = self.qos.can_consume_max_estimate()  # counts ``item``'s slot; None: no prefetch limit
        more = max(min(BATCH_MAX if room is None else room, BATCH_MAX) - 1, 0)
        client = self._create_client()  # first: it registers ``_reserve`` on a new client
        taken: list[bytes] = self._reserve(keys=[key, self.qos.unacked_key, self.qos.unacked_index_key],
                                           args=[item, more, time(), SHARE], client=client)
        return taken

    def _give_back(self, payloads: list[dict[str, Any]]) -> None:
        """Messages of a batch the consumer never saw: back to their queue now, not at the timeout."""
        for payload in reversed(payloads):
            tag = payload["properties"]["delivery_tag"]
            self.qos.recorded.discard(tag)
            self.qos.restore_by_tag(tag)  # to the tail: the next BRPOP takes it first


def _payload(item: bytes) -> dict[str, Any]:
    return loads(bytes_to_str(item))  # type: ignore[no-any-return, no-untyped-call]


class Transport(kombu_redis.Transport):
    Channel = Channel


__all__ = ["BATCH_MAX", "SHARE", "Channel", "QoS", "Transport"]
