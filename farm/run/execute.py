"""One run of one case: its turns in order, in one conversation, under timeouts. Never raises.

The in-process executor and the Celery ``farm.run`` task both call ``execute_run``; every
outcome (a failed check, an agent exception, a timeout) comes back as a ``RunResult``.

Conversation rules (SPEC 4.1): turns of a run share one conversation; a turn with
``continue_conversation: false`` makes the *next* turn start a fresh one (new chat id, empty
history, no carried sly_data). Returned ``sly_data`` merges into what the next turn sends.
Each run builds its state from the immutable ``Case``, so no run sees another run's state.

A Yao dynamic case (``case.dynamic``) is played by ``farm.run.dynamic`` instead: a simulator writes
the user's turns. A case's ``before``/``after`` hooks run around each run (``farm.suites.hooks``). Every
run that does not pass gets its failure class and turn (``farm.models.failure_class``).
"""

from __future__ import annotations

import os
import threading
import time

from farm.agents.base import Agent, AgentRequest, Conversation
from farm.checks import calls_filter, evaluate_turn, waiting_checks
from farm.checks.base import CheckContext, JudgeResolver
from farm.errors import AgentError, FaultKind
from farm.models import Assertion, Case, CheckOutcome, ErrorInfo, JsonValue, Message, Reply, RunResult, RunStatus, Turn
from farm.models.dynamic import TurnRecord
from farm.models.failure_class import classify_run
from farm.models.served import Served
from farm.models.trajectory import ToolCall
from farm.models.usage import RunUsage
from farm.run.dynamic import DynamicLoop, ScriptedSimulator, Simulator, SimulatorResolver
from farm.run.environment import RunEnvironment, first_chat_id, turn_context
from farm.run.waiting import left, queued_timeout, run_clock
from farm.stats.trajectory import recorded_calls
from farm.suites.hooks import HookFailedError, RunHooks

_second: tuple[int, str] = (-1, "")
"""The last whole second formatted by ``_utc_now_ms`` and its text (runs start many times a second)."""


def _utc_now_ms() -> str:
    """Now in UTC to the millisecond, ``2026-11-22T10:15:00.123Z``, as ``datetime.isoformat``
    writes it, for an eighth of its cost."""
    global _second
    now = time.time()
    second = int(now)
    cached, text = _second
    if cached != second:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second = (second, text)
    return f"{text}.{int((now - second) * 1000):03d}Z"


_CHAT_IDS_A_READ = 256
_chat_ids_lock = threading.Lock()
_chat_ids: list[str] = []
"""Chat ids read from the OS and not given yet (the last one is given next)."""


def _forget_chat_ids() -> None:
    global _chat_ids_lock
    _chat_ids.clear()  # a forked child must not give its parent's next ids again
    _chat_ids_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_chat_ids)


def _new_chat_id() -> str:
    """32 random hex digits from the OS, as ``uuid4().hex`` gave (no UUID object), read 256 at a time:
    ``os.urandom`` lets go of the GIL, and a sweep whose agents run on threads then waited for it
    back once a run (10,000 runs of a python agent: ~0.3 s of CPU, ~10 % of the runs a second)."""
    with _chat_ids_lock:
        if not _chat_ids:
            block = os.urandom(16 * _CHAT_IDS_A_READ).hex()
            _chat_ids.extend(block[i:i + 32] for i in range(0, len(block), 32))
        return _chat_ids.pop()


class _RunState:
    """Mutable per-run state: the conversation, its history, the carried sly_data, the turn."""

    def __init__(self, chat_id: str | None = None) -> None:
        self.conversation = Conversation(chat_id=chat_id or _new_chat_id())
        self.history: list[dict[str, JsonValue]] = []
        self.sly_data: dict[str, JsonValue] | None = None
        self.retries = 0
        self.turn = 0
        """The turn in progress (1-based; 0 before the first)."""
        self.timeout_s = 0.0
        """The run's own timeout."""
        self.budget_left_s: float | None = None
        """Set when a neuro-san test's budget (``farm.sweep.deadlines``) ends the run sooner: what was left."""
        self.usage = RunUsage()
        """Tokens of every answered turn (``farm.models.usage``)."""
        self.trajectory: list[ToolCall] = []
        """The tool calls of every answered turn, in order (SPEC 21): trajectory checks read it."""
        self.served: Served | None = None  # the last answered turn's (SPEC 25)
        self.chat_filter: str | None = None
        """For turns that set none: ``MAXIMAL`` when the case checks tool calls (``calls_filter``)."""

    def limit(self, case: Case) -> str:
        """How a whole-run timeout is told: ``300s``, or what was left of the test's budget."""
        if self.budget_left_s is None:
            return f"{self.timeout_s:g}s"
        return f"{self.budget_left_s:.3g}s, what was left of the test's {case.test_timeout_s:g}s"

    def start_fresh(self) -> None:
        """A new conversation: new chat id, empty history, nothing carried; retries kept."""
        self.retries += self.conversation.retries
        self.conversation = Conversation(chat_id=_new_chat_id())
        self.history = []
        self.sly_data = None

    def total_retries(self) -> int:
        return self.retries + self.conversation.retries


def _merge(base: dict[str, JsonValue] | None, extra: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
    if base is None and extra is None:
        return None
    return {**(base or {}), **(extra or {})}


def _assistant_message(reply: Reply) -> dict[str, JsonValue]:
    return {"role": "assistant", "content": reply.as_text()}


_NO_REPLY = ErrorInfo(type="AgentError", message="agent returned no Reply", kind=FaultKind.PARSE.value)
"""A python agent that answered something that is not a Reply: an answer the farm cannot read."""


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
    remaining = left(deadline)
    turn_timeout = min(turn.timeout_s, remaining) if turn.timeout_s else remaining
    request = AgentRequest(
        messages=state.history + new_messages,
        new_messages=new_messages,
        sly_data=sly,
        chat_filter=turn.chat_filter or state.chat_filter,
        timeout_s=max(turn_timeout, 0.0),
        context=turn_context(case, run, env, state.conversation.chat_id, sly, index),
        conversation=state.conversation,
    )
    try:
        if turn_timeout <= 0:  # as wait_for(…, 0) did: the agent is not called at all
            raise TimeoutError
        # asyncio.timeout cancels this task in place: no extra Task per call (wait_for makes one).
        # A sync agent's thread is abandoned on cancel (farm.agents.python), so a hung one times out too.
        async with queued_timeout(turn_timeout):  # a wait for a slot in fleet control pushes it back
            reply = await agent.respond(request)
    except TimeoutError:
        raise _timed_out(case, turn, index, state, whole=turn_timeout >= remaining) from None
    except AgentError as exc:
        state.conversation.retries = max(state.conversation.retries, exc.retries)
        raise _Outcome(RunStatus.ERROR, ErrorInfo.of_agent_error(exc)) from None
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the agent's own failure is data, not a
        # crash of the sweep: sys.exit() or a stray KeyboardInterrupt in agent code is an error run too
        raise _Outcome(RunStatus.ERROR, ErrorInfo.from_exception(exc)) from None
    if not isinstance(reply, Reply):
        raise _Outcome(RunStatus.ERROR, _NO_REPLY.model_copy())
    state.history = [*request.messages, _assistant_message(reply)]
    state.sly_data = _merge(sly, reply.sly_data)
    state.trajectory.extend(reply.tool_calls)
    state.served = reply.served or state.served
    return reply


def _timed_out(case: Case, turn: Turn, index: int, state: _RunState, *, whole: bool) -> _Outcome:
    """A turn that ran out of time: the whole run's limit, or the turn's own ``timeout_s``."""
    what = "run" if whole else f"turn {index}"
    limit = state.limit(case) if whole else f"{turn.timeout_s:g}s"
    return _Outcome(RunStatus.TIMEOUT, ErrorInfo(type="Timeout", message=f"{what} timed out after {limit}"))


async def _check_turn(
    turn: Turn, reply: Reply, ctx: CheckContext, index: int, deadline: float
) -> list[CheckOutcome]:
    if not turn.assertions and not turn.stock_tests:
        return []
    remaining = left(deadline)
    try:
        if remaining <= 0:
            raise TimeoutError
        if not waiting_checks(turn):  # they never suspend, so no timeout could interrupt them
            return await evaluate_turn(turn, reply, ctx, index)
        async with queued_timeout(remaining):  # a judge's wait for a slot pushes it back
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
    state.chat_filter = calls_filter(case)
    for index, turn in enumerate(case.turns, start=1):
        if fresh_next:
            state.start_fresh()
        state.turn = index
        reply = await _send_turn(agent, case, run, turn, index, state, env, deadline)
        result.output = reply.output
        if len(case.turns) > 1:  # the transcript: multi-turn answers are compared whole (SPEC 16)
            said = " ".join(m.text() for m in turn.messages if m.role == "user")
            result.turns = [*(result.turns or []), TurnRecord(turn=index, input=said, output=reply.output)]
        state.usage.add(reply.usage)
        result.turns_completed = index
        result.checks.extend(await _check_turn(turn, reply, ctx, index, deadline))
        fresh_next = not turn.continue_conversation
    result.status = RunStatus.PASSED if all(c.passed for c in result.checks) else RunStatus.FAILED


async def _run_dynamic(
    agent: Agent, case: Case, run: int, env: RunEnvironment, ctx: CheckContext,
    state: _RunState, result: RunResult, deadline: float, simulators: SimulatorResolver | None,
) -> None:
    """A Yao dynamic case: the simulator writes the user's turns (``farm.run.dynamic``)."""
    assert case.dynamic is not None

    async def send(messages: list[Message], index: int) -> Reply:
        state.turn = index
        reply = await _send_turn(agent, case, run, Turn(messages=messages), index, state, env, deadline)
        result.output = reply.output
        state.usage.add(reply.usage)
        result.turns_completed = index
        return reply

    async def check(assertions: list[Assertion], reply: Reply, index: int) -> list[CheckOutcome]:
        return await _check_turn(Turn(messages=[], assertions=assertions), reply, ctx, index, deadline)

    loop = DynamicLoop(case.dynamic, case.turns[0].messages if case.turns else [], result, yao_compat=env.yao_compat)
    simulator = _simulator(case, simulators)
    status, error = await loop.run(simulator, send, check, lambda: list(state.history), deadline,
                                   state.limit(case))
    result.status, result.error = status, error


def _simulator(case: Case, simulators: SimulatorResolver | None) -> Simulator:
    assert case.dynamic is not None
    spec = case.dynamic.simulator
    if simulators is not None:
        return simulators(spec)
    if spec.use is None:  # scripted only: no resolver needed
        return ScriptedSimulator(spec.fixed_responses)
    raise _Outcome(RunStatus.ERROR, ErrorInfo(type="AgentResolutionError",
                                              message=f"simulator {spec.use}: no simulator resolver in this executor"))


def _deadline(case: Case, env: RunEnvironment, start: float, not_after: float | None, state: _RunState) -> float:
    """When the run must end (monotonic): its own timeout, or what is left of the test's budget."""
    state.timeout_s = env.case_timeout(case)
    deadline = start + state.timeout_s
    if not_after is not None and start + (not_after - time.time()) < deadline:
        state.budget_left_s = max(not_after - time.time(), 0.0)
        deadline = start + state.budget_left_s
    return deadline


def _finish(result: RunResult, state: _RunState, start: float) -> None:
    """Duration, retries and (a run that did not pass) its failure class and turn."""
    clock = run_clock()
    queued_s = clock.queued_s if clock is not None else 0.0  # waiting for capacity is not running
    result.duration_ms = round((time.monotonic() - start - queued_s) * 1000, 3)
    if clock is not None:
        result.queued_ms = round(queued_s * 1000, 3)
    result.retries = state.total_retries()
    state.usage.fill(result)
    result.trajectory, result.served = recorded_calls(state.trajectory), state.served
    if result.status is not RunStatus.PASSED:  # a passing run has no class: no work on the common path
        result.failure_class, result.failed_turn = classify_run(result, state.turn)


async def execute_run(
    case: Case, run: int, agent: Agent, env: RunEnvironment, *, judges: JudgeResolver | None = None,
    simulators: SimulatorResolver | None = None, not_after: float | None = None,
) -> RunResult:
    """Run every turn of ``case`` once against ``agent``; return the outcome as data.

    ``simulators`` builds the simulated users of dynamic cases (``farm.run.simulators``); without
    it only scripted simulators (``fixed_responses``) can play. ``not_after`` (epoch seconds)
    ends the run earlier than its own timeout: what is left of the test's budget (``farm.sweep.deadlines``).
    """
    started_at = _utc_now_ms()
    result = RunResult(case_id=case.id, run=run, status=RunStatus.PASSED, started_at=started_at,
                       sweep_id=env.sweep_id)
    if case.skip:
        result.status = RunStatus.SKIPPED
        return result
    state = _RunState(first_chat_id(env, run))
    ctx = CheckContext(case.input, case.expected, case.base_dir, env.neuro_san_compat, judges=judges,
                       trajectory=state.trajectory, confirm_failures=env.confirm_failures)
    hooks = RunHooks(case) if case.before or case.after else None  # most cases have none: no cost per run
    hook_context = turn_context(case, run, env, state.conversation.chat_id, None, 1) if hooks else None
    start = time.monotonic()
    deadline = _deadline(case, env, start, not_after, state)
    try:
        if hooks:
            await hooks.before(hook_context)
        if case.dynamic is not None:
            await _run_dynamic(agent, case, run, env, ctx, state, result, deadline, simulators)
        else:
            await _run_turns(agent, case, run, env, ctx, state, result, deadline)
    except _Outcome as outcome:
        result.status, result.error = outcome.status, outcome.error
    except HookFailedError as exc:
        result.status, result.error = RunStatus.ERROR, ErrorInfo(type="HookError", message=str(exc))
    except (Exception, SystemExit) as exc:  # a bug in a check, a hook or the farm: one run, not a dead sweep
        result.status, result.error = RunStatus.ERROR, ErrorInfo.from_exception(exc)
    _finish(result, state, start)
    if hooks:
        await hooks.after(hook_context, result)
    return result
