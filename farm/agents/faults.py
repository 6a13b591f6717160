"""What a client fault or an HTTP status means to the farm, decided once for every adapter.

The farm knows two kinds of fault (as httpx's ``map_httpcore_exceptions`` maps httpcore's onto
its own): ``TransientError``, worth another try (``farm.agents.retry``), and ``AgentError``:

    connection refused, DNS failure, connect timeout    TransientError  "connection failed"
    connection reset or closed, body cut short,         TransientError  "connection lost"
      malformed HTTP answer
    no byte for the read timeout                        AgentError      "no answer within Ns"
    TLS failure, bad URL, any other client error        AgentError
    HTTP 429, 502, 503, 504                             TransientError  (with ``Retry-After``)
    any other HTTP status >= 400                        AgentError

Messages name the caller (``what``) and are redacted. aiohttp is imported on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from farm.agents.retry import RETRYABLE_STATUSES, TransientError, parse_retry_after
from farm.agents.secrets import excerpt, redact
from farm.errors import AgentError

__all__ = ["client_fault", "status_fault"]


@functools.cache
def _fault_table() -> tuple[tuple[type[BaseException], bool, str], ...]:
    """(client exception, transient?, what it means), most specific first."""
    import aiohttp

    return (
        (aiohttp.ClientSSLError, False, "TLS failure"),
        (aiohttp.ConnectionTimeoutError, True, "connection failed"),
        (aiohttp.ClientConnectorError, True, "connection failed"),
        (aiohttp.ServerDisconnectedError, True, "connection lost"),
        (aiohttp.ClientPayloadError, True, "connection lost"),
        (aiohttp.ClientOSError, True, "connection lost"),
        (aiohttp.ClientResponseError, True, "connection lost"),  # a malformed answer: the peer broke
        (aiohttp.InvalidURL, False, "invalid URL"),
        (aiohttp.ClientError, False, "request failed"),
    )


def client_fault(exc: BaseException, what: str, read_s: float | None) -> Exception:
    """The farm's fault for a client exception (the table in the module docstring); ``read_s``
    is the read timeout the request had, for the message of a read timeout."""
    import aiohttp

    if isinstance(exc, aiohttp.SocketTimeoutError):
        return AgentError(redact(f"{what}: no answer within {read_s or 0:g}s (read timeout)"))
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    for kind, transient, meaning in _fault_table():
        if isinstance(exc, kind):
            message = redact(f"{what}: {meaning} ({detail})")
            return TransientError(message) if transient else AgentError(message)
    return AgentError(redact(f"{what}: request failed ({detail})"))


def status_fault(status: int, headers: Mapping[str, str], body: str, what: str) -> Exception | None:
    """The fault an HTTP status means: None below 400; 429/502/503/504 are transient."""
    if status < 400:
        return None
    message = redact(f"{what}: HTTP {status}: {excerpt(body)}")
    if status in RETRYABLE_STATUSES:
        return TransientError(message, retry_after=parse_retry_after(headers.get("Retry-After")))
    return AgentError(message)
