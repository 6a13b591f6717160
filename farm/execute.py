"""One run of one case: its turns in order, in one conversation, under timeouts. Never raises.

The in-process executor and the Celery ``farm.run`` task both call ``execute_run``; every
outcome (a failed check, an agent exception, a timeout) comes back as a ``RunResult``.

Conversation rules (SPEC 4.1): turns of a run share one conversation; a turn with
``continue_conversation: false`` makes the *next* turn start a fresh one (new chat id, empty
history, no carried sly_data). Returned ``sly_data`` merges into what the next turn sends.
Each run builds its state from the immutable ``Case``, so no run sees another run's state.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from farm.agents.base import Agent, AgentContext, AgentRequest, Conversation
from farm.checks import evaluate_turn, waiting_checks
from farm.checks.base import CheckContext, JudgeResolver
from farm.errors import AgentError
from farm.fleet.usage import RunUsage
from farm.models import Case, CheckOutcome, ErrorInfo, JsonValue, Reply, RunResult, RunStatus, Turn
from farm.settings import DEFAULT_CASE_TIMEOUT_S


@dataclass(frozen=True)
class RunEnvironment:
    """Sweep-wide settings that shape every run (JSON-able: workers rebuild it)."""

    user: str | None = None
    """``-u``: wins over the case's ``user``."""
    team: str | None = None
    connector: str | None = None
    timeout_s: float | None = None
    """``--timeout``: default whole-run timeout for cases that set none."""
    neuro_san_compat: bool = False
    sweep_id: str | None = None
    locale: str = "en-us"
    client_type: str = "test"
    client_ip: str = "127.0.0.1"
    referer: str = "test"
    accept: str = "standard"

    def case_timeout(self, case: Case) -> float:
        return case.timeout_s or self.timeout_s or DEFAULT_CASE_TIMEOUT_S

    def describe(self) -> dict[str, JsonValue]:
        """The environment section of reports."""
        return {
            "user_id": self.user or "test-user",
            "team_id": self.team or "test-team",
            "locale": self.locale,
            "client_type": self.client_type,
            "client_ip": self.client_ip,
            "referer": self.referer,
            "accept": self.accept,
            "connector": self.connector,
        }


def _new_chat_id() -> str:
    """32 random hex digits, as ``uuid4().hex`` gave, for a tenth of its cost (no UUID object)."""
    return os.urandom(16).hex()


class _RunState:
    """Mutable per-run state: the conversation, its history and the carried sly_data."""

    def __init__(self) -> None:
        self.conversation = Conversation(chat_id=_new_chat_id())
        self.history: list[dict[str, JsonValue]] = []
        self.sly_data: dict[str, JsonValue] | None = None
        self.retries = 0
        self.usage = RunUsage()

    def start_fresh(self) -> None:
        """A new conversation: new chat id, empty history, nothing carried; retries kept."""
        self.retries += self.conversation.retries
        self.conversation = Conversation(chat_id=_new_chat_id())
        self.history = []
        self.sly_data = None

    def total_retries(self) -> int:
        return self.retries + self.conversation.retries


def _context(case: Case, run: int, env: RunEnvironment, chat_id: str, sly: dict[str, JsonValue] | None,
             turn: int) -> AgentContext:
    return AgentContext(
        user_id=env.user or case.user or "test-user",
        team_id=env.team or case.team or "test-team",
        locale=env.locale,
        client_type=env.client_type,
        client_ip=env.client_ip,
        referer=env.referer,
        accept=env.accept,
        case_id=case.id,
        run=run,
        turn=turn,
        chat_id=chat_id,
        metadata=case.metadata,
        sly_data=sly,
        connector=env.connector,
    )


def _merge(base: dict[str, JsonValue] | None, extra: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
    if base is None and extra is None:
        return None
    return {**(base or {}), **(extra or {})}


def _assistant_message(reply: Reply) -> dict[str, JsonValue]:
    if reply.text is not None:
        content = reply.text
    elif reply.structure is not None:
        content = json.dumps(reply.structure, ensure_ascii=False)
    else:
        content = ""
    return {"role": "assistant", "content": content}


class _Outcome(Exception):
    """Ends a run early with a status (timeout or error)."""

    def __init__(self, status: RunStatus, error: ErrorInfo) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error


async def _send_turn(
    agent: Agent, case: Case, run: int, turn: Turn, index: int, state: _RunState,
    env: RunEnvironment, deadline: float,
) -> Reply:
    new_messages = [m.model_dump(mode="json", exclude_none=True) for m in turn.messages]
    sly = _merge(state.sly_data, turn.sly_data)
    remaining = deadline - time.monotonic()
    turn_timeout = min(turn.timeout_s, remaining) if turn.timeout_s else remaining
    request = AgentRequest(
        messages=state.history + new_messages,
        new_messages=new_messages,
        sly_data=sly,
        chat_filter=turn.chat_filter,
        timeout_s=max(turn_timeout, 0.0),
        context=_context(case, run, env, state.conversation.chat_id, sly, index),
        conversation=state.conversation,
    )
    try:
        if turn_timeout <= 0:  # as wait_for(…, 0) did: the agent is not called at all
            raise TimeoutError
        # asyncio.timeout cancels this task in place: no extra Task per call (wait_for makes one).
        # A sync agent's thread is abandoned on cancel (farm.agents.python), so a hung one times out too.
        async with asyncio.timeout(turn_timeout):
            reply = await agent.respond(request)
    except TimeoutError:
        whole = turn_timeout >= remaining
        what = "run" if whole else f"turn {index}"
        limit = env.case_timeout(case) if whole else turn.timeout_s
        raise _Outcome(
            RunStatus.TIMEOUT, ErrorInfo(type="Timeout", message=f"{what} timed out after {limit:g}s")
        ) from None
    except AgentError as exc:
        state.conversation.retries = max(state.conversation.retries, exc.retries)
        raise _Outcome(RunStatus.ERROR, ErrorInfo(type="AgentError", message=exc.message)) from None
    except Exception as exc:  # the agent's own failure is data, not a crash of the sweep
        raise _Outcome(RunStatus.ERROR, ErrorInfo.from_exception(exc)) from None
    if not isinstance(reply, Reply):
        raise _Outcome(RunStatus.ERROR, ErrorInfo(type="AgentError", message="agent returned no Reply"))
    state.history = [*request.messages, _assistant_message(reply)]
    state.sly_data = _merge(sly, reply.sly_data)
    return reply


async def _check_turn(
    turn: Turn, reply: Reply, ctx: CheckContext, index: int, deadline: float
) -> list[CheckOutcome]:
    if not turn.assertions and not turn.stock_tests:
        return []
    remaining = deadline - time.monotonic()
    try:
        if remaining <= 0:
            raise TimeoutError
        if not waiting_checks(turn):  # they never suspend, so no timeout could interrupt them
            return await evaluate_turn(turn, reply, ctx, index)
        async with asyncio.timeout(remaining):
            return await evaluate_turn(turn, reply, ctx, index)
    except TimeoutError:
        raise _Outcome(
            RunStatus.TIMEOUT, ErrorInfo(type="Timeout", message=f"checks of turn {index} timed out")
        ) from None


async def _run_turns(
    agent: Agent, case: Case, run: int, env: RunEnvironment, ctx: CheckContext,
    state: _RunState, result: RunResult, deadline: float,
) -> None:
    fresh_next = False
    for index, turn in enumerate(case.turns, start=1):
        if fresh_next:
            state.start_fresh()
        reply = await _send_turn(agent, case, run, turn, index, state, env, deadline)
        result.output = reply.output
        state.usage.add(reply.usage)
        result.turns_completed = index
        result.checks.extend(await _check_turn(turn, reply, ctx, index, deadline))
        fresh_next = not turn.continue_conversation


async def execute_run(
    case: Case, run: int, agent: Agent, env: RunEnvironment, *, judges: JudgeResolver | None = None
) -> RunResult:
    """Run every turn of ``case`` once against ``agent``; return the outcome as data."""
    started_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    result = RunResult(case_id=case.id, run=run, status=RunStatus.PASSED, started_at=started_at,
                       sweep_id=env.sweep_id)
    if case.skip:
        result.status = RunStatus.SKIPPED
        return result
    ctx = CheckContext(input=case.input, expected=case.expected, base_dir=case.base_dir,
                       neuro_san_compat=env.neuro_san_compat, judges=judges)
    state = _RunState()
    start = time.monotonic()
    deadline = start + env.case_timeout(case)
    try:
        await _run_turns(agent, case, run, env, ctx, state, result, deadline)
        result.status = RunStatus.PASSED if all(c.passed for c in result.checks) else RunStatus.FAILED
    except _Outcome as outcome:
        result.status, result.error = outcome.status, outcome.error
    except Exception as exc:  # a bug in a check or in the farm: still one run, not a dead sweep
        result.status = RunStatus.ERROR
        result.error = ErrorInfo.from_exception(exc)
    result.duration_ms = round((time.monotonic() - start) * 1000, 3)
    result.retries = state.total_retries()
    state.usage.fill(result)
    return result
