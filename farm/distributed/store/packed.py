"""Commands packed here in Redis's protocol (RESP) and sent on one connection of a client's pool,
for the one bulk write there is: a plan's cases and index (``farm.distributed.store.plans``).

redis-py packs every argument in Python (type checks, an encode and a join each): ~3 µs of a
planned case's ~11 µs of storing a million-case plan (issue 32). Here a batch of commands is a
few joins of bytes, and the next batch is packed while Redis runs the one just sent (its replies,
a few integers, are read after the next is sent): at most two batches in flight.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def command(words: Sequence[bytes]) -> bytes:
    """One command (``[b"EXPIRE", key, b"60"]``), packed."""
    return b"".join([b"*%d\r\n" % len(words), *[b"$%d\r\n%b\r\n" % (len(word), word) for word in words]])


class PackedSender:
    """Sends packed batches in order on one connection taken from ``client``'s pool for as long as
    it is open; any failure (an error reply: OOM, a lost connection) is raised as redis-py raises
    it, and the connection, with replies maybe left unread, is dropped."""

    def __init__(self, client: Any) -> None:
        self._pool = client.connection_pool
        self._connection: Any = None
        self._due = 0
        """Replies of the last batch sent, not read yet."""

    def __enter__(self) -> PackedSender:
        try:
            self._connection = self._pool.get_connection()
        except TypeError:  # redis-py before 5.3 names a command
            self._connection = self._pool.get_connection("HSET")
        return self

    def send(self, payload: bytes, replies: int) -> None:
        """Send ``payload`` (``replies`` commands), then read the replies of the batch before it."""
        # no health check (a PING) while replies are due: it would read one of them as its answer
        self._connection.send_packed_command([payload], check_health=not self._due)
        self._read()
        self._due = replies

    def _read(self) -> None:
        for _ in range(self._due):
            self._connection.read_response()
        self._due = 0

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        try:
            if error is None:
                self._read()
        except BaseException:
            self._connection.disconnect()
            raise
        finally:
            if error is not None:
                self._connection.disconnect()
            self._pool.release(self._connection)


__all__ = ["PackedSender", "command"]
