"""asyncio Redis clients for fleet control, one per event loop.

A worker holds runs in flight on several threads, each with its own event loop, and an asyncio
Redis connection belongs to the loop that opened it. So every fleet backend asks ``LoopClients``
for the running loop's client (and its registered Lua scripts); a loop that ends takes its
client with it (weak references), and ``aclose`` closes the calling loop's client.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis
import redis.asyncio as aioredis

from farm.errors import BrokerError
from farm.settings import safe_url

T = TypeVar("T")
CONNECTION_ERRORS = (redis.ConnectionError, redis.TimeoutError, OSError)
RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0)
"""A store that drops a connection is asked again after each of these pauses (~8 s in all) before
the step fails: a failed bookkeeping step must not fail a run a blip could not."""


def script_arg(value: float | None) -> str:
    """A Lua script's optional number: '' for None (``tonumber('')`` is nil), else exact (repr)."""
    return "" if value is None else repr(value)


class LoopClients:
    """The Redis client of the running event loop, for one store URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = weakref.WeakKeyDictionary()

    def _current(self) -> _LoopClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._clients.get(loop)
            if found is None:
                found = self._clients[loop] = _LoopClient(aioredis.Redis.from_url(
                    self.url, decode_responses=True, socket_connect_timeout=5, socket_timeout=30))
            return found

    def client(self) -> Any:
        """The running loop's client (typed Any: redis-py's stubs mix sync and async replies)."""
        return self._current().client

    async def run_script(self, lua: str, keys: list[str], args: list[Any]) -> Any:
        """Run ``lua`` (EVALSHA, loading it once) on the running loop's client."""
        current = self._current()
        script = current.scripts.get(lua)
        if script is None:
            script = current.scripts[lua] = current.client.register_script(lua)
        return await self.call(lambda: script(keys=keys, args=args))

    async def call(self, command: Callable[[], Awaitable[T]]) -> T:
        """Await a Redis command, retried while the server cannot be reached (``RETRY_DELAYS_S``);
        still unreachable, a BrokerError naming it (no password)."""
        for delay in (*RETRY_DELAYS_S, None):
            try:
                return await command()
            except CONNECTION_ERRORS as exc:
                if delay is None:
                    raise BrokerError(f"fleet control: cannot reach the store at {safe_url(self.url)}: {exc}") from None
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Close the running loop's client (other loops close their own)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            current = self._clients.pop(loop, None)
        if current is not None:
            await current.client.aclose()


class _LoopClient:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.scripts: dict[str, Any] = {}
