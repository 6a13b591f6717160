"""Retrying transient infrastructure faults (SPEC 6), with tenacity.

Adapters raise ``TransientError`` for faults worth another try: connection refused or reset,
a broken response, HTTP 429/502/503/504. ``call_with_retries`` retries those with exponential
backoff and jitter (at most ``max_delay``, 10 s), waits at least what ``Retry-After`` asked
for (up to ``MAX_RETRY_AFTER_S``, 120 s), counts every retry on the
conversation (reports show them) and, when the attempts run out, raises ``AgentError`` naming
the last fault. Any other exception passes through at once.

tenacity is imported on the first transient fault, not with this module: every sweep imports
this module, few retry, and tenacity imports tornado whenever tornado is installed (20 ms).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, TypeVar

from farm.agents.base import Conversation
from farm.errors import AgentError, FaultKind
from farm.settings import whole_number_env

if TYPE_CHECKING:
    from tenacity import RetryCallState

T = TypeVar("T")

DEFAULT_ATTEMPTS = 4
"""Tries per call, the first included."""
ATTEMPTS_ENV = "FARM_RETRY_ATTEMPTS"
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
"""HTTP statuses that mean "try again later", not "your request is wrong"."""
MAX_RETRY_AFTER_S = 120.0
"""Longest ``Retry-After`` honoured (a rate limit often asks for a minute); the turn's timeout
still bounds the whole call, so a longer wait ends as a ``timeout``, never a hang."""


class TransientError(Exception):
    """Raised by adapters for a fault that may go away if the call is repeated."""

    def __init__(self, message: str, *, retry_after: float | None = None,
                 kind: FaultKind = FaultKind.CONNECT) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        """Seconds the server asked us to wait (``Retry-After``), or None."""
        self.kind = kind
        """What the ``AgentError`` raised when the retries run out says failed."""


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP-date; None if bad."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def attempts_from_env(default: int) -> int:
    """``FARM_RETRY_ATTEMPTS`` when set (an integer ≥ 1), else ``default``."""
    attempts = whole_number_env(ATTEMPTS_ENV, counting="attempts")
    return default if attempts is None else attempts


class _BackoffHonouringRetryAfter:
    """Exponential backoff with jitter, capped at ``max_delay``; when the fault carries
    ``retry_after``, wait at least that, up to ``max_retry_after``."""

    def __init__(self, base_delay: float, max_delay: float, max_retry_after: float = MAX_RETRY_AFTER_S) -> None:
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        from tenacity.wait import wait_exponential, wait_random  # on a retry only (module docstring)

        self.backoff = wait_exponential(multiplier=base_delay, max=max_delay) + wait_random(0, base_delay)

    def __call__(self, state: RetryCallState) -> float:
        backoff = min(self.backoff(state), self.max_delay)
        fault = state.outcome.exception() if state.outcome else None
        asked = fault.retry_after if isinstance(fault, TransientError) else None
        if asked is None:
            return backoff
        return min(max(asked, backoff), max(self.max_retry_after, backoff))


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    conversation: Conversation | None,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = 0.2,
    max_delay: float = 10.0,
    max_retry_after: float = MAX_RETRY_AFTER_S,
) -> T:
    """Await ``fn()``, retrying ``TransientError``; give up with ``AgentError(retries=n)``.

    The first try runs outside tenacity (building its retry loop costs ~5 % of an HTTP call);
    the loop starts only after a transient fault, and counts that try as its first attempt.

    Raises:
        AgentError: the attempts ran out (or ``fn`` raised one, its ``retries`` filled in).
        SettingsError: ``FARM_RETRY_ATTEMPTS`` is not an integer ≥ 1.
    """
    try:
        return await fn()
    except TransientError as fault:
        first = fault
    total = attempts_from_env(attempts)  # read after a fault only: an environment look-up per call is not free
    return await _retry_after_first(
        fn, first, conversation, total, _BackoffHonouringRetryAfter(base_delay, max_delay, max_retry_after)
    )


async def _retry_after_first(
    fn: Callable[[], Awaitable[T]], first: TransientError, conversation: Conversation | None,
    attempts: int, wait: _BackoffHonouringRetryAfter,
) -> T:
    from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt  # module docstring

    retries = 0
    pending = [first]  # attempt 1 already ran: tenacity sees its fault, waits and counts as usual

    def count(state: RetryCallState) -> None:
        nonlocal retries
        retries += 1
        if conversation is not None:
            conversation.retries += 1

    retrying = AsyncRetrying(
        stop=stop_after_attempt(attempts), wait=wait, retry=retry_if_exception_type(TransientError),
        before_sleep=count, reraise=True,
    )
    try:
        async for attempt in retrying:  # fn may be any callable returning an awaitable (a lambda)
            with attempt:
                if pending:
                    raise pending.pop()
                result = await fn()
    except TransientError as fault:
        tries = f"{retries} {'retry' if retries == 1 else 'retries'}"
        raise AgentError(f"{fault.message} (gave up after {tries})", retries=retries, kind=fault.kind) from fault
    except AgentError as error:
        error.retries = error.retries or retries
        raise
    return result
