"""What a client fault or an HTTP status means to the farm, decided once for every adapter.

The farm knows two kinds of fault (as httpx's ``map_httpcore_exceptions`` maps httpcore's onto
its own): ``TransientError``, worth another try (``farm.agents.retry``), and ``AgentError``.
Each carries a ``FaultKind`` (last column), the run's failure class once the retries are over:

    connection refused, DNS failure, connect timeout    TransientError  "connection failed"   connect
    connection reset or closed, body cut short,         TransientError  "connection lost"     connect
      malformed HTTP answer
    no byte for the read timeout                        AgentError      "no answer within Ns" timeout
    TLS failure, any other client error                 AgentError                            connect
    bad URL                                             AgentError                            config
    HTTP 429 (an "insufficient quota" answer: quota)    TransientError  (with ``Retry-After``) 429
    HTTP 502, 503, 504                                  TransientError  (with ``Retry-After``) 5xx
    any other HTTP status >= 500                        AgentError                            5xx
    any other HTTP status >= 400                        AgentError                            config

Messages name the caller (``what``) and are redacted. aiohttp is imported on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from farm.agents.quota import quota_message
from farm.agents.retry import RETRYABLE_STATUSES, TransientError, parse_retry_after
from farm.agents.secrets import excerpt, redact
from farm.errors import AgentError, FaultKind

__all__ = ["client_fault", "status_fault"]


@functools.cache
def _fault_table() -> tuple[tuple[type[BaseException], bool, str, FaultKind], ...]:
    """(client exception, transient?, what it means, its kind), most specific first."""
    import aiohttp

    connect = FaultKind.CONNECT
    return (
        (aiohttp.ClientSSLError, False, "TLS failure", connect),
        (aiohttp.ConnectionTimeoutError, True, "connection failed", connect),
        (aiohttp.ClientConnectorError, True, "connection failed", connect),
        (aiohttp.ServerDisconnectedError, True, "connection lost", connect),
        (aiohttp.ClientPayloadError, True, "connection lost", connect),
        (aiohttp.ClientOSError, True, "connection lost", connect),
        (aiohttp.ClientResponseError, True, "connection lost", connect),  # a malformed answer: the peer broke
        (aiohttp.InvalidURL, False, "invalid URL", FaultKind.CONFIG),
        (aiohttp.ClientError, False, "request failed", connect),
    )


def client_fault(exc: BaseException, what: str, read_s: float | None) -> Exception:
    """The farm's fault for a client exception (the table in the module docstring); ``read_s``
    is the read timeout the request had, for the message of a read timeout."""
    import aiohttp

    if isinstance(exc, aiohttp.SocketTimeoutError):
        return AgentError(redact(f"{what}: no answer within {read_s or 0:g}s (read timeout)"), kind=FaultKind.TIMEOUT)
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    for cls, transient, meaning, kind in _fault_table():
        if isinstance(exc, cls):
            message = redact(f"{what}: {meaning} ({detail})")
            return TransientError(message, kind=kind) if transient else AgentError(message, kind=kind)
    return AgentError(redact(f"{what}: request failed ({detail})"), kind=FaultKind.CONNECT)


def status_fault(status: int, headers: Mapping[str, str], body: str, what: str) -> Exception | None:
    """The fault an HTTP status means: None below 400; 429/502/503/504 are transient."""
    if status < 400:
        return None
    message = redact(f"{what}: HTTP {status}: {excerpt(body)}")
    kind = _status_kind(status, body)
    if status in RETRYABLE_STATUSES:
        return TransientError(message, retry_after=parse_retry_after(headers.get("Retry-After")), kind=kind)
    return AgentError(message, kind=kind)


AUTH_STATUSES = frozenset({401, 403, 407})
"""HTTP statuses by which the agent (or a proxy) refused the farm's credentials."""


def _status_kind(status: int, body: str) -> FaultKind:
    """The kind of fault an HTTP error status (>= 400) is: 5xx, 429 (quota when the body says
    so), else a request the test got wrong."""
    if status >= 500:
        return FaultKind.SERVER
    if status == 429:
        return FaultKind.QUOTA if quota_message(status, body) is not None else FaultKind.RATE_LIMIT
    return FaultKind.AUTH if status in AUTH_STATUSES else FaultKind.CONFIG
