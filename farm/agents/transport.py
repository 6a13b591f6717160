"""HTTP for every adapter: one client stack (aiohttp), one TLS context, one fault mapping, one limiter seam.

The http, prompt (through its connector), neuro-san and judge adapters make every HTTP attempt
through a ``Transport``; none builds a client of its own. A ``Transport`` keeps one
``aiohttp.ClientSession`` per event loop (an adapter may serve several loops, one per worker
thread), all sharing one verifying ``SSLContext`` (``shared_ssl_context``).

Faults are mapped once, in ``farm.agents.faults`` (connection faults and 429/502/503/504
transient, everything else an ``AgentError``); answers are read whole or line by line
(``farm.agents.answers``); a stream cut after its answer began is an ``AgentError``, never
retried (the agent may have acted).

Fleet control (issue 13) plugs in through the limiter seam (``farm.agents.limiter``): every attempt
(a retried call is several) asks the transport's ``CallLimiter`` before its request and releases the
lease when it ends, whatever the outcome.
aiohttp is imported when the first ``Transport`` is built (an adapter that speaks HTTP), so that
sweeps without HTTP agents never load it, and a sweep's clock does not count the import (~0.1 s)
in its first call. Adapters built only to be checked (a distributed
submitter's, a listing's: ``client_deferred``) load it at their first session instead, which
never comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl
import sys
import threading
import weakref
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any

from farm.agents.answers import HttpAnswer, Stream
from farm.agents.faults import client_fault, status_fault
from farm.agents.limiter import NO_LIMITER, CallLease, CallLimiter
from farm.agents.quota import raise_if_quota_exhausted
from farm.agents.retry import parse_retry_after
from farm.models.usage import usage_counts

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "Attempt",
    "HttpAnswer",
    "Stream",
    "Transport",
    "read_timeout",
    "shared_ssl_context",
]

MAX_CONNECTIONS = 320
"""Connections one transport may hold open per event loop (the old bound: 32 clients x 10)."""
CONNECT_TIMEOUT_S = 10.0
DEFAULT_TIMEOUT_S = 300.0
"""Read timeout when neither the turn nor the manifest gives one (the case default, 5m)."""
TURN_TIMEOUT_SLACK_S = 1.0
"""Added to a turn's ``timeout_s``: the caller's deadline (``execute``) fires first and records a
``timeout``; ours is only the backstop for callers without one."""


# ------------------------------------------------------------------------------- TLS, timeouts


_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


class _TrustOnFirstUse(ssl.SSLContext):
    """A verifying client context that loads certifi's bundle when it first wraps a connection:
    a sweep of http:// agents never pays for it (~27 ms, measured)."""

    _trusted = False

    def _trust(self) -> None:
        if not self._trusted:
            with _ssl_lock:
                if not self._trusted:
                    import certifi

                    self.load_verify_locations(cafile=certifi.where())
                    self._trusted = True

    def wrap_bio(self, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, server_side: bool = False,
                 server_hostname: str | bytes | None = None, session: ssl.SSLSession | None = None) -> ssl.SSLObject:
        self._trust()
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)

    def wrap_socket(self, sock: socket.socket, server_side: bool = False, do_handshake_on_connect: bool = True,
                    suppress_ragged_eofs: bool = True, server_hostname: str | bytes | None = None,
                    session: ssl.SSLSession | None = None) -> ssl.SSLSocket:
        self._trust()
        return super().wrap_socket(sock, server_side, do_handshake_on_connect, suppress_ragged_eofs,
                                   server_hostname, session)


def shared_ssl_context() -> ssl.SSLContext:
    """One verifying SSL context for every session, trusting certifi's bundle (what the farm trusted
    with httpx) from its first connection (``_TrustOnFirstUse``); TLS 1.2 or newer, hostnames
    checked (``PROTOCOL_TLS_CLIENT``'s defaults); ``SSL_CERT_*`` variables are ignored. An
    ``SSLContext`` may be shared by several loops.
    """
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            context = _TrustOnFirstUse(ssl.PROTOCOL_TLS_CLIENT)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            if sys.version_info >= (3, 13):  # as ssl.create_default_context does there
                context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
            _ssl_context = context
        return _ssl_context


def read_timeout(turn_s: float | None, own_s: float | None) -> float | None:
    """The HTTP read timeout of one turn: the agent's own limit, or the turn's plus slack."""
    limits = [t for t in (turn_s + TURN_TIMEOUT_SLACK_S if turn_s else None, own_s) if t]
    return min(limits) if limits else None


@functools.lru_cache(maxsize=64)
def _client_timeout(read_s: float | None) -> aiohttp.ClientTimeout:
    import aiohttp

    return aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=read_s)


# ------------------------------------------------------------------------------- attempts


class Attempt:
    """One HTTP attempt under a limiter lease: ``async with transport.attempt(key) as attempt``.

    The lease is released on exit with the status, ``Retry-After`` and usage this attempt saw.
    """

    __slots__ = ("_lease", "_transport", "key", "retry_after_s", "status", "tokens", "usage")

    def __init__(self, transport: Transport, key: str, tokens: int) -> None:
        self._transport = transport
        self._lease: CallLease | None = None
        self.key = key
        self.tokens = tokens
        self.status: int | None = None
        self.retry_after_s: float | None = None
        self.usage: dict[str, int] | None = None

    async def __aenter__(self) -> Attempt:
        self._lease = await self._transport.limiter.acquire(self.key, tokens=self.tokens)
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        if self._lease is not None:
            lease, self._lease = self._lease, None
            await lease.release(status=self.status, retry_after_s=self.retry_after_s, usage=self.usage)

    def record_usage(self, usage: Mapping[str, Any] | None) -> None:
        """Tell the limiter what the answer says it used (its integer token counts)."""
        self.usage = usage_counts(usage)

    def raise_for_status(self, status: int, headers: Mapping[str, str], body: str, what: str) -> None:
        """Raise the fault an error answer of this attempt means (``status_fault``); the one place
        every error answer of every adapter passes, with the attempt's rate-limit ``key``. An
        answer saying the provider's quota is used up stops the sweep (``QuotaExhaustedError``)."""
        raise_if_quota_exhausted(self.key, status, body)
        fault = status_fault(status, headers, body, what)
        if fault is not None:
            raise fault

    def _saw(self, status: int, headers: Mapping[str, str]) -> None:
        self.status = status
        if status >= 400:
            self.retry_after_s = parse_retry_after(headers.get("Retry-After"))

    async def post_json(
        self, url: str, body: Any, *, headers: Mapping[str, str], timeout_s: float | None, what: str
    ) -> HttpAnswer:
        """POST ``body`` as JSON and read the whole answer; faults and bad statuses raise (module docstring)."""
        import aiohttp

        session = self._transport.session()
        read_s = timeout_s or DEFAULT_TIMEOUT_S
        timeout = _client_timeout(read_s)
        try:
            async with session.post(url, json=body, headers=headers or None, timeout=timeout) as response:
                answer = HttpAnswer(response.status, response.headers, await response.read())
        except aiohttp.ClientError as exc:
            raise client_fault(exc, what, read_s) from None
        self._saw(answer.status, answer.headers)
        if answer.status >= 400:
            self.raise_for_status(answer.status, answer.headers, answer.text, what)
        return answer

    async def get(self, url: str, *, timeout_s: float, what: str) -> HttpAnswer:
        """GET ``url`` and read the whole answer; faults raise, statuses are the caller's to judge."""
        import aiohttp

        session = self._transport.session()
        try:
            async with session.get(url, timeout=_client_timeout(timeout_s)) as response:
                answer = HttpAnswer(response.status, response.headers, await response.read())
        except aiohttp.ClientError as exc:
            raise client_fault(exc, what, timeout_s) from None
        self._saw(answer.status, answer.headers)
        return answer

    def open_stream(self, url: str, body: Any, *, headers: Mapping[str, str], what: str) -> _StreamContext:
        """POST ``body`` as JSON and stream the answer: ``async with attempt.open_stream(...) as stream``.

        No read timeout (a stream may be silent for long): the caller bounds the whole exchange,
        and leaving the block early (a timeout, a fault) closes the connection, so the server
        sees the client go.
        """
        return _StreamContext(self, url, body, headers, what)


class _StreamContext:
    def __init__(self, attempt: Attempt, url: str, body: Any, headers: Mapping[str, str], what: str) -> None:
        self.attempt, self.url, self.body, self.headers, self.what = attempt, url, body, headers, what
        self._response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> Stream:
        import aiohttp

        session = self.attempt._transport.session()
        try:
            self._response = await session.post(self.url, json=self.body, headers=self.headers,
                                                timeout=_client_timeout(None))
        except aiohttp.ClientError as exc:
            raise client_fault(exc, self.what, None) from None
        self.attempt._saw(self._response.status, self._response.headers)
        return Stream(self._response, self.attempt, self.what)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if self._response is None:
            return
        if exc is None:
            self._response.release()
        else:
            self._response.close()  # not back to the pool: the server must see the client go


# ------------------------------------------------------------------------------- sessions


class Transport:
    """The HTTP side of one adapter: a session per event loop and the limiter of its attempts.

    Close it with ``aclose`` on each loop that used it. Sessions left open (a worker thread's
    loop that is never closed, a process exiting) are dropped quietly when the transport is
    collected or the interpreter exits, instead of aiohttp logging "Unclosed client session".
    """

    def __init__(self, limiter: CallLimiter | None = None) -> None:
        if not _client_deferred.get():
            _load_client()
        self.limiter: CallLimiter = limiter or NO_LIMITER
        self._lock = threading.Lock()
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        weakref.finalize(self, _forget_all, self._sessions, self._lock)

    def attempt(self, key: str, *, tokens: int = 0) -> Attempt:
        """One attempt under the limiter (``async with``)."""
        return Attempt(self, key, tokens)

    def session(self) -> aiohttp.ClientSession:
        """The running loop's session, created on first use."""
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            with self._lock:
                session = self._sessions.get(loop)
                if session is None or session.closed:
                    session = self._sessions[loop] = _new_session()
        return session

    async def aclose(self) -> None:
        """Close the running loop's session; drop those of loops already closed.

        A session of a loop still running elsewhere is left to that loop's own ``aclose``.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            mine = self._sessions.pop(loop, None)
            orphans = [self._sessions.pop(other) for other in list(self._sessions) if other.is_closed()]
        for orphan in orphans:
            _drop(orphan)
        if mine is not None:
            await mine.close()


_client_deferred: ContextVar[bool] = ContextVar("farm_http_client_deferred", default=False)


@contextlib.contextmanager
def client_deferred() -> Iterator[None]:
    """Transports built inside load aiohttp at their first session, not when built."""
    token = _client_deferred.set(True)
    try:
        yield
    finally:
        _client_deferred.reset(token)


def _load_client() -> None:
    """Import aiohttp (once per process; its default contexts' CA bundles deferred: ``client_import``)."""
    from farm.agents.client_import import import_aiohttp

    import_aiohttp()


def _new_session() -> aiohttp.ClientSession:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=shared_ssl_context())
    # No cookie jar: runs are independent, and a shared jar would carry one run's state to the next.
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False,
                                 timeout=_client_timeout(DEFAULT_TIMEOUT_S))


_closing: set[asyncio.Task[None]] = set()
"""Sessions being closed on their own running loop by ``_forget_all`` (a task needs a holder)."""


def _forget_all(sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession], lock: threading.Lock) -> None:
    """A transport went away with sessions open: close each where it can, else drop it."""
    with lock:
        left = list(sessions.items())
        sessions.clear()
    for loop, session in left:
        if session.closed:
            continue
        if loop.is_running():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing to close on
                loop.call_soon_threadsafe(_close_on_loop, session)
                continue
        _drop(session)


def _close_on_loop(session: aiohttp.ClientSession) -> None:
    task = asyncio.ensure_future(session.close())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


def _drop(session: aiohttp.ClientSession) -> None:
    """Forget a session whose loop does not run (nothing can be awaited on it) without GC warnings.

    Its connector's transports are closed synchronously (aiohttp's ``_close``: its public
    ``close`` is a coroutine, which needs the loop); the session is detached so that neither
    object reports itself unclosed when collected.
    """
    connector = session.connector
    session.detach()
    if connector is not None:
        connector._close()
