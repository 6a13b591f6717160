"""Checks on agent replies: Yao assertions and neuro-san stock tests (SPEC 4.2).

``evaluate_turn`` is the one entry point the executor uses; ``farm.checks.spec`` validates
check specs when suites load; ``judges_needed`` tells which judges a sweep's checks will ask
(this package is the only place that knows which checks are judged).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from typing import Protocol, TypeVar

from farm.checks.base import CheckContext, Judge, JudgeResolver, JudgeVerdict
from farm.checks.extract import JSON_TYPES, json_equal
from farm.checks.judged import parse_verdict
from farm.checks.spec import STOCK_TESTS, YAO_TYPES
from farm.checks.stock import evaluate_stock
from farm.checks.trajectory import TRAJECTORY_CHECKS
from farm.checks.yao import evaluate_assertion
from farm.models import Case, CheckOutcome, Reply, Turn

__all__ = [
    "JSON_TYPES",
    "JUDGED_ASSERTIONS",
    "JUDGED_STOCK_TESTS",
    "STOCK_TESTS",
    "YAO_TYPES",
    "CheckContext",
    "Judge",
    "JudgeResolver",
    "JudgeVerdict",
    "calls_filter",
    "evaluate_assertion",
    "evaluate_stock",
    "evaluate_turn",
    "json_equal",
    "judges_needed",
    "parse_verdict",
    "waiting_checks",
]


JUDGED_ASSERTIONS = frozenset({"agent"})
"""Assertion types answered by a judge (its ``use``, else the default ``--judge``)."""
JUDGED_STOCK_TESTS = frozenset({"gist", "not_gist"})
"""Stock tests answered by the default judge."""
_WAITING_ASSERTIONS = JUDGED_ASSERTIONS | {"script"}
"""Assertion types that may wait on I/O (a script, an LLM judge)."""
_WAITING_STOCK_TESTS = JUDGED_STOCK_TESTS
_TOOL_CHECKS = frozenset({"tool_called", "tool_result", *TRAJECTORY_CHECKS})


async def evaluate_turn(turn: Turn, reply: Reply, ctx: CheckContext, turn_index: int) -> list[CheckOutcome]:
    """Evaluate every check of ``turn`` on ``reply``: all of them, passed or not, in order.

    Yao assertions look at ``reply.output``; stock tests at ``reply.text`` / ``sly_data`` /
    ``structure``. Never raises for a failing or crashing check.
    """
    jobs = [_safe(a.type, evaluate_assertion(a, reply, ctx, turn_index), turn_index) for a in turn.assertions]
    jobs += [_safe(t.test, evaluate_stock(t, reply, ctx, turn_index), turn_index) for t in turn.stock_tests]
    if waiting_checks(turn) >= 2:
        # Judge and script checks wait on I/O: run them side by side; gather keeps the order.
        return list(await asyncio.gather(*jobs))
    # At most one check waits: in turn costs the same time without a Task per check.
    return [await job for job in jobs]


class _Turned(Protocol):
    @property
    def turns(self) -> Sequence[Turn]: ...


_T = TypeVar("_T", bound=_Turned)


def judges_needed(cases: Iterable[_T]) -> dict[str | None, _T]:
    """Every judge the checks of ``cases`` ask for (None: the default ``--judge``), with the first
    case that asks (a ``Case``, or a listing's unbuilt ``PlainCase``)."""
    uses: dict[str | None, _T] = {}
    last = None
    for case in cases:
        for turn in case.turns:
            if turn is last:  # listed cases share their turn (``LoadOptions.listing``): it adds nothing new
                continue
            last = turn
            for assertion in turn.assertions:
                if assertion.type in JUDGED_ASSERTIONS:
                    uses.setdefault(assertion.use, case)
            if turn.stock_tests and any(t.test in JUDGED_STOCK_TESTS for t in turn.stock_tests):
                uses.setdefault(None, case)
    return uses


def calls_filter(case: Case) -> str | None:
    """``MAXIMAL`` when a check of ``case`` reads tool calls (``tool_called``, ``tool_result``, the
    trajectory checks): neuro-san sends its calls only with that chat filter, and a trajectory
    check needs every turn's. None: the agent's default."""
    for turn in case.turns:  # loops rather than any(generator): read on every run
        for assertion in turn.assertions:
            if assertion.type in _TOOL_CHECKS:
                return "MAXIMAL"
    return None


def waiting_checks(turn: Turn) -> int:
    """How many checks of ``turn`` may wait on I/O; the others finish without ever suspending."""
    waiting = 0  # loops rather than sum(generator): read twice on every run
    for assertion in turn.assertions:
        waiting += assertion.type in _WAITING_ASSERTIONS
    for test in turn.stock_tests:
        waiting += test.test in _WAITING_STOCK_TESTS
    return waiting


async def _safe(name: str, job: Awaitable[CheckOutcome], turn_index: int) -> CheckOutcome:
    # Checks catch their own failures; this is the last guard so one check never sinks a run.
    try:
        return await job
    except Exception as exc:
        return CheckOutcome(
            name=name, passed=False, message=f"check crashed: {type(exc).__name__}: {exc}", turn=turn_index
        )
