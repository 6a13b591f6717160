"""An exhausted quota stops the sweep with its own error and exit code (SPEC 10, 13)."""

from __future__ import annotations

import asyncio
import json

import pytest

from farm.agents.quota import quota_error, raise_if_quota_exhausted
from farm.agents.secrets import register_secret
from farm.errors import BudgetExhaustedError, ExitCode, FleetStop, QuotaExhaustedError
from farm.fleet.control import FleetScope, Refusal, fleet_scope
from farm.fleet.limiter import RateLimiter
from farm.fleet.local_rates import LocalRateBackend
from farm.fleet.ratestate import AdaptivePolicy
from farm.stats import build_report, exit_code_for

OPENAI_QUOTA = json.dumps({"error": {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}})
OPENAI_RATE = json.dumps({"error": {
    "message": "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 3, Used 3.",
    "type": "requests", "param": None, "code": "rate_limit_exceeded"}})
ANTHROPIC_CREDIT = json.dumps({"type": "error", "error": {
    "type": "invalid_request_error",
    "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing."}})


def test_exit_codes_and_stopped_reasons() -> None:
    assert (BudgetExhaustedError.exit_code, BudgetExhaustedError.stopped) == (ExitCode.BUDGET, "budget")
    assert (QuotaExhaustedError.exit_code, QuotaExhaustedError.stopped) == (ExitCode.QUOTA, "quota")
    assert (int(ExitCode.BUDGET), int(ExitCode.QUOTA)) == (4, 5)
    assert issubclass(BudgetExhaustedError, FleetStop) and issubclass(QuotaExhaustedError, FleetStop)


def test_quota_answers_are_told_from_rate_limits() -> None:
    error = quota_error("openai.gpt-4o", 429, OPENAI_QUOTA)
    assert isinstance(error, QuotaExhaustedError)
    assert "quota is exhausted (HTTP 429: You exceeded your current quota" in error.message
    assert quota_error("anthropic", 400, ANTHROPIC_CREDIT.encode()) is not None
    assert quota_error("openai.gpt-4o", 429, OPENAI_RATE) is None
    assert quota_error("k", 429, "Too Many Requests") is None
    assert quota_error("k", 200, OPENAI_QUOTA) is None
    assert quota_error("k", 429, None) is None


def test_a_quota_message_never_carries_a_secret() -> None:
    register_secret("sk-quota-secret-123")
    body = json.dumps({"error": {"code": "insufficient_quota", "message": "key sk-quota-secret-123 has no quota"}})
    error = quota_error("k", 429, body)
    assert error is not None and "sk-quota-secret-123" not in error.message and "***" in error.message


def test_a_429_that_keeps_coming_raises_from_acquire() -> None:
    policy = AdaptivePolicy(cooldown_s=0.01, quota_strikes=3, quota_streak_s=0.02, quota_hold_s=60)

    async def scenario() -> None:
        limiter = RateLimiter(LocalRateBackend(), policy=policy)
        for _ in range(3):
            lease = await limiter.acquire("openai.gpt-4o")
            await asyncio.sleep(0.015)
            await lease.release(status=429, retry_after_s=None, usage=None)
        with pytest.raises(QuotaExhaustedError, match=r"'openai\.gpt-4o': the provider's quota looks exhausted"):
            await limiter.acquire("openai.gpt-4o")
        other = await limiter.acquire("judge")  # other keys go on
        await other.release(status=200, retry_after_s=None, usage=None)

    asyncio.run(scenario())


def test_a_quota_answer_raises_and_is_noted_in_the_run_scope() -> None:
    refusal = Refusal()
    with fleet_scope(FleetScope(refusal=refusal)):
        raise_if_quota_exhausted("k", 429, OPENAI_RATE)  # a plain rate limit: nothing
        assert refusal.error is None
        with pytest.raises(QuotaExhaustedError):
            raise_if_quota_exhausted("k", 429, OPENAI_QUOTA)
    assert refusal.error is not None and refusal.error.stopped == "quota"


@pytest.mark.parametrize(("stopped", "code"), [("quota", ExitCode.QUOTA), ("budget", ExitCode.BUDGET),
                                               ("fail-fast", ExitCode.OK), (None, ExitCode.OK)])
def test_a_sweep_stopped_by_fleet_control_exits_with_its_code(stopped: str | None, code: ExitCode) -> None:
    metadata = {"stopped": stopped} if stopped else {}
    report = build_report([], duration_ms=0, runs_per_case=1, environment={}, metadata=metadata)
    assert exit_code_for(report) is code
