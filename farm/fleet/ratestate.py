"""One rate-limit key's algorithm, in plain Python: the in-process backend runs it as is and the
Redis backend (``farm.distributed.fleet.rates``) runs the same steps in Lua; one conformance test
drives both through the same scenarios on a virtual clock.

Per key, every call must pass four gates, all in one atomic step (nothing is taken unless
everything is granted):

- **pause**: after a 429 or a ``Retry-After``, nobody calls the key until the pause ends;
- **concurrency**: leases of calls in flight, each expiring (a process that dies without
  releasing frees its lease after ``lease_ttl_s``);
- **requests**: GCRA (the theoretical arrival time ``tat`` advances one emission interval per
  call; a call may come early by one interval or ``EARLY_S``, whichever is longer, and the first
  call after a silence opens the grid as if it came that early: ``next_slot``), so requests are
  spaced evenly instead of a whole window's quota in one burst, which providers punish;
- **tokens**: a bucket holding a minute's worth; a call *reserves* its estimate, and *settles*
  with the real usage after (refund, or debt that later calls wait out).

Adaptive (AIMD): a 429 or ``Retry-After`` multiplies the key's ``factor`` by ``decrease``
(floored at ``min_factor``) and pauses the key for ``max(Retry-After, cooldown_s)``; the factor
scales the request rate, the token rate and the concurrency cap (a key with neither a cap nor a
request rate gets a cap, its calls in flight at the first cut: the lever it has). Calls sent
before the last cut do not cut again (a burst of 429s from one round halves once). After the
pause the factor grows back by ``recovery_per_s`` each second without a new cut (additive
increase). A 429 streak of at least ``quota_strikes`` answers over ``quota_streak_s`` without a
single other answer marks the key's quota exhausted for ``quota_hold_s``: acquiring then raises
instead of waiting.

Times are milliseconds (floats) on the backend's clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from farm.plan.rate_specs import RateLimit

EARLY_S = 0.03
"""GCRA's tolerance: a call may come this much (or one emission interval, if longer) before its
slot. It absorbs callers' scheduling jitter on a busy machine (a late caller loses its slot for
good). A caller that waits its turn comes early, so calls land one interval apart; in any second
at most 3 % (plus one call, if a caller is late by less than this and its followers catch up)
over the rate."""
TOKEN_BUCKET_S = 60.0
"""The token bucket holds this many seconds of the token rate (providers count tokens per minute)."""
CONCURRENCY_POLL_S = 0.02
"""How soon a caller refused for concurrency asks again (a release is not announced)."""


@dataclass(frozen=True)
class AdaptivePolicy:
    """How a key reacts to 429s, and how long leases and quota marks last."""

    decrease: float = 0.5
    min_factor: float = 1 / 64
    recovery_per_s: float = 0.05
    """Additive increase: the factor regains this much per second without a 429 (20 s to full)."""
    cooldown_s: float = 1.0
    """Shortest pause after a 429 (a ``Retry-After`` asks for longer)."""
    max_pause_s: float = 120.0
    """Longest pause honoured (a ``Retry-After`` of an hour is a quota, not a pause)."""
    lease_ttl_s: float = 660.0
    """A call's lease expires after this (the default case timeout, 5 min, and margin: a lease must
    outlive the call it guards, else the cap is exceeded)."""
    quota_strikes: int = 20
    quota_streak_s: float = 300.0
    quota_hold_s: float = 60.0
    fair: bool = False
    """First come, first served among the callers waiting for a key (SPEC 15): a refused caller
    takes a ticket, and no caller is granted while an older ticket waits. A ticket lives until the
    caller's next try is due plus ``ticket_grace_s``: a dead caller never blocks the queue's head."""
    ticket_grace_s: float = 1.0


@dataclass(frozen=True)
class Decision:
    """What ``try_acquire`` answered: granted (and when), wait, or quota exhausted."""

    granted: bool
    wait_s: float = 0.0
    acquired_at_ms: float = 0.0
    reserved_tokens: int = 0
    """Tokens actually taken from the bucket (the estimate, capped at the bucket's size)."""
    quota: bool = False


@dataclass
class KeyState:
    """A key's state; the Redis hash ``farm:fleet:limit:{key}`` holds the same fields."""

    tat: float | None = None
    level: float | None = None
    """Tokens in the bucket at ``level_at`` (None: full)."""
    level_at: float = 0.0
    cut_factor: float = 1.0
    cut_at: float = -math.inf
    pause_until: float = 0.0
    base_conc: int = 0
    strikes: int = 0
    streak_start: float = 0.0
    quota_at: float | None = None
    leases: dict[str, float] = field(default_factory=dict)
    """Lease id → expiry."""
    tickets: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Waiting caller's lease id → (its place in the queue, expiry) (``AdaptivePolicy.fair``)."""
    ticket_seq: int = 0

    def factor(self, now: float, policy: AdaptivePolicy) -> float:
        """The AIMD factor now: the last cut, grown back linearly once the pause is over."""
        if self.cut_factor >= 1:
            return 1.0
        grown = self.cut_factor + policy.recovery_per_s * max(0.0, now - self.pause_until) / 1000
        return min(1.0, grown)

    def cap(self, limit: RateLimit, factor: float) -> int | None:
        """Calls allowed in flight now (None: no cap)."""
        if limit.concurrency is not None:
            return max(1, math.floor(limit.concurrency * factor))
        if factor < 1 and self.base_conc > 0 and limit.requests_per_s is None:
            return max(1, math.floor(self.base_conc * factor))
        return None

    def tokens_now(self, limit: RateLimit, factor: float, now: float) -> float:
        assert limit.tokens_per_s is not None
        capacity = limit.tokens_per_s * TOKEN_BUCKET_S
        if self.level is None:
            return capacity
        return min(capacity, self.level + (now - self.level_at) * limit.tokens_per_s * factor / 1000)


def next_slot(tat: float | None, now: float, early: float) -> float:
    """The slot the next call takes (GCRA's theoretical arrival time, with the tolerance ``early``).

    A caller late for its slot by less than ``early`` takes it now, and the calls queued behind it
    may catch up (a scheduling hiccup costs no slot). After a longer silence (an idle key, the start
    of a sweep) the next call opens a new grid as if it came ``early`` before its slot, like every
    call that waits its turn: otherwise it and the next call would go at once, one call over the
    rate in the first second (at 20/s, 21; at 2/s, 3).
    """
    if tat is None or tat < now - early:
        return now + early
    return max(tat, now)


def try_acquire(state: KeyState, limit: RateLimit, policy: AdaptivePolicy, *, tokens: int, lease_id: str,
                now: float) -> Decision:
    """Grant a call (taking a lease, a request slot and its tokens) or say how long to wait."""
    if state.quota_at is not None and now - state.quota_at < policy.quota_hold_s * 1000:
        return Decision(granted=False, quota=True)
    state.leases = {lease: expiry for lease, expiry in state.leases.items() if expiry > now}
    factor = state.factor(now, policy)
    waits = [state.pause_until - now]
    cap = state.cap(limit, factor)
    if cap is not None and len(state.leases) >= cap:
        waits.append(CONCURRENCY_POLL_S * 1000)
    if policy.fair and _behind(state, lease_id, now):
        waits.append(CONCURRENCY_POLL_S * 1000)  # an older ticket goes first
    tat = interval = 0.0
    if limit.requests_per_s is not None:
        interval = 1000 / (limit.requests_per_s * factor)
        early = max(interval, EARLY_S * 1000)
        tat = next_slot(state.tat, now, early)
        waits.append(tat - early - now)
    need = 0
    if limit.tokens_per_s is not None:
        need = min(tokens, math.floor(limit.tokens_per_s * TOKEN_BUCKET_S))
        level = state.tokens_now(limit, factor, now)
        waits.append((need - level) * 1000 / (limit.tokens_per_s * factor))
    wait = max(waits)
    if wait > 0:
        if policy.fair:
            place = state.tickets[lease_id][0] if lease_id in state.tickets else _next_ticket(state)
            state.tickets[lease_id] = (place, now + wait + policy.ticket_grace_s * 1000)
        return Decision(granted=False, wait_s=wait / 1000)
    state.tickets.pop(lease_id, None)
    state.leases[lease_id] = now + policy.lease_ttl_s * 1000
    if limit.requests_per_s is not None:
        state.tat = tat + interval
    if limit.tokens_per_s is not None:
        state.level, state.level_at = state.tokens_now(limit, factor, now) - need, now
    return Decision(granted=True, acquired_at_ms=now, reserved_tokens=need)


def _behind(state: KeyState, lease_id: str, now: float) -> bool:
    """Whether a live ticket older than the caller's (any, when it has none) waits."""
    state.tickets = {lease: ticket for lease, ticket in state.tickets.items() if ticket[1] > now}
    mine = state.tickets[lease_id][0] if lease_id in state.tickets else math.inf
    return any(place < mine for place, _ in state.tickets.values())


def _next_ticket(state: KeyState) -> int:
    state.ticket_seq += 1
    return state.ticket_seq


def release(state: KeyState, limit: RateLimit, policy: AdaptivePolicy, *, lease_id: str, acquired_at: float,
            reserved_tokens: int, status: int | None, retry_after_s: float | None, used_tokens: int | None,
            now: float) -> None:
    """End a call: free its lease, settle its tokens, and react to a 429 or ``Retry-After``."""
    in_flight = len(state.leases)
    state.leases.pop(lease_id, None)
    factor = state.factor(now, policy)
    if limit.tokens_per_s is not None and used_tokens is not None:
        level = state.tokens_now(limit, factor, now) + reserved_tokens - used_tokens
        state.level, state.level_at = min(level, limit.tokens_per_s * TOKEN_BUCKET_S), now
    if status == 429 or retry_after_s is not None:
        _throttled(state, policy, factor, in_flight, acquired_at, retry_after_s, now)
    if status == 429:
        _strike(state, policy, now)
    elif status is not None:
        state.strikes = 0


def _throttled(state: KeyState, policy: AdaptivePolicy, factor: float, in_flight: int, acquired_at: float,
               retry_after_s: float | None, now: float) -> None:
    if acquired_at >= state.cut_at:  # a call sent before the last cut was answered at the old rate
        if factor >= 1:
            state.base_conc = in_flight
        state.cut_factor = max(policy.min_factor, factor * policy.decrease)
        state.cut_at = now
    pause = min(max(retry_after_s or 0.0, policy.cooldown_s), policy.max_pause_s)
    state.pause_until = max(state.pause_until, now + pause * 1000)


def _strike(state: KeyState, policy: AdaptivePolicy, now: float) -> None:
    if state.strikes == 0:
        state.streak_start = now
    state.strikes += 1
    if state.strikes >= policy.quota_strikes and now - state.streak_start >= policy.quota_streak_s * 1000:
        state.quota_at = now
