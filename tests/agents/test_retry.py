"""Retries of transient faults: counting, giving up, Retry-After, FARM_RETRY_ATTEMPTS."""

from __future__ import annotations

import asyncio
import sys
from email.utils import formatdate

import pytest
from tenacity import RetryCallState

from farm.agents.base import Conversation
from farm.agents.retry import (
    TransientError,
    _BackoffHonouringRetryAfter,
    attempts_from_env,
    call_with_retries,
    parse_retry_after,
)
from farm.errors import AgentError, SettingsError


class Flaky:
    """Fails with the given exceptions in turn, then answers 'ok'."""

    def __init__(self, *faults: BaseException) -> None:
        self.faults = list(faults)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.faults:
            raise self.faults.pop(0)
        return "ok"


def run(fn: Flaky, conversation: Conversation | None = None, **kwargs: float) -> str:
    return asyncio.run(call_with_retries(fn, conversation=conversation, base_delay=0.001, **kwargs))


def test_transient_faults_are_retried_and_counted_on_the_conversation() -> None:
    conversation = Conversation(chat_id="c")
    fn = Flaky(TransientError("reset"), TransientError("503"))
    assert run(fn, conversation) == "ok"
    assert fn.calls == 3
    assert conversation.retries == 2


def test_giving_up_raises_agent_error_naming_the_last_fault_and_the_retries() -> None:
    conversation = Conversation(chat_id="c")
    fn = Flaky(*(TransientError(f"fault {i}") for i in range(10)))
    with pytest.raises(AgentError) as caught:
        run(fn, conversation, attempts=3)
    assert fn.calls == 3
    assert caught.value.retries == 2 == conversation.retries
    assert "fault 2" in caught.value.message
    assert "gave up after 2 retries" in caught.value.message


def test_one_attempt_gives_up_after_the_first_fault() -> None:
    fn = Flaky(TransientError("refused"), TransientError("again"))
    with pytest.raises(AgentError) as caught:
        run(fn, attempts=1)
    assert fn.calls == 1
    assert caught.value.retries == 0
    assert "refused (gave up after 0 retries)" in caught.value.message


def test_the_first_fault_retry_after_is_honoured() -> None:
    # the first try runs outside tenacity: its fault must still set the first wait
    fn = Flaky(TransientError("429", retry_after=0.3))
    loop_time: list[float] = []

    async def timed() -> str:
        loop = asyncio.get_running_loop()
        start = loop.time()
        result = await call_with_retries(fn, conversation=None, base_delay=0.001)
        loop_time.append(loop.time() - start)
        return result

    assert asyncio.run(timed()) == "ok"
    assert fn.calls == 2
    assert loop_time[0] >= 0.3


def test_a_success_at_once_counts_no_retry() -> None:
    conversation = Conversation(chat_id="c")
    assert run(Flaky(), conversation) == "ok"
    assert conversation.retries == 0


def test_other_exceptions_pass_through_at_once() -> None:
    fn = Flaky(ValueError("bug"))
    with pytest.raises(ValueError, match="bug"):
        run(fn)
    assert fn.calls == 1


def test_an_agent_error_after_retries_carries_the_retry_count() -> None:
    fn = Flaky(TransientError("429"), AgentError("HTTP 500"))
    with pytest.raises(AgentError) as caught:
        run(fn, None)
    assert fn.calls == 2
    assert caught.value.retries == 1


def test_no_conversation_is_fine() -> None:
    assert run(Flaky(TransientError("x")), None) == "ok"


def test_environment_overrides_the_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "2")
    fn = Flaky(*(TransientError("down") for _ in range(5)))
    with pytest.raises(AgentError) as caught:
        run(fn, attempts=6)
    assert fn.calls == 2
    assert caught.value.retries == 1


@pytest.mark.parametrize("value", ["0", "-1", "three", "1.5"])
def test_a_bad_attempts_variable_is_a_settings_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", value)
    with pytest.raises(SettingsError, match="FARM_RETRY_ATTEMPTS"):
        attempts_from_env(4)


def test_attempts_default_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_RETRY_ATTEMPTS", raising=False)
    assert attempts_from_env(4) == 4
    monkeypatch.setenv("FARM_RETRY_ATTEMPTS", "7")
    assert attempts_from_env(4) == 7


def test_retry_after_in_seconds_and_as_an_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0 ") == 0.0
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30.0)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None


def state_after(fault: BaseException, attempt: int) -> RetryCallState:
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    try:
        raise fault
    except type(fault):
        state.set_exception(sys.exc_info())  # type: ignore[arg-type]
    return state


def test_the_wait_is_at_least_what_retry_after_asked_and_capped() -> None:
    wait = _BackoffHonouringRetryAfter(base_delay=0.01, max_delay=10.0)
    assert wait(state_after(TransientError("429", retry_after=2.5), 1)) == 2.5
    # a Retry-After is honoured past the backoff cap (rate limits ask for a minute), up to 120 s
    assert wait(state_after(TransientError("429", retry_after=60), 1)) == 60
    assert wait(state_after(TransientError("429", retry_after=600), 1)) == 120.0
    backoff_only = wait(state_after(TransientError("reset"), 1))
    assert 0.01 <= backoff_only <= 0.02
    # a late attempt's backoff exceeds a small Retry-After: the larger one wins
    assert wait(state_after(TransientError("429", retry_after=0.0), 8)) >= 0.01 * 2**7


def test_backoff_grows_exponentially() -> None:
    wait = _BackoffHonouringRetryAfter(base_delay=0.1, max_delay=100.0)
    first = wait(state_after(TransientError("x"), 1))
    fourth = wait(state_after(TransientError("x"), 4))
    assert fourth > first * 3
