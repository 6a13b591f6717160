"""Yao dynamic cases (SPEC 14.1): a simulator plays the user until the checkpoints are reached.

The loop is Yao's ``agent/eval`` runner (``dynamic_runner.go``), turn by turn:

1. the run's time is checked at the start of every turn (past it: ``timeout``);
2. the simulator writes the user's message, except on turn 1 when the case has an ``input``
   (``"input": []`` lets the simulator open). It gets one user message holding the JSON
   ``{persona?, goal?, conversation, turn_number, max_turns, checkpoints_reached?,
   checkpoints_pending?, extra?}`` and answers ``{message, goal_achieved}`` (text that is not
   JSON is the message). ``goal_achieved`` ends the run: ``passed`` when every required
   checkpoint was reached, else ``failed``;
3. the agent answers, in the same conversation;
4. checkpoints not yet reached are checked in list order against the turn's combined output
   (its text and the ``message`` of its tool results, joined by newlines); one whose ``after``
   checkpoints are not all reached waits;
5. every required checkpoint reached: ``passed``. After ``max_turns`` turns: ``failed``.

Where Yao's documentation and code disagree the default is stricter (see ``farm.suites.dynamic``
for the load-time half): a simulator reply without ``message`` errors the run with a message
saying why; ``yao_compat`` reproduces Yao's code instead (its own terse error, an empty text
sent as an empty message). Unlike Yao, reached and pending checkpoints are listed in the case's
order (Go iterates a map), so the same run sends the same simulator input.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from farm.checks.extract import extract_data
from farm.errors import AgentError
from farm.models import (
    Assertion,
    CheckOutcome,
    CheckpointResult,
    DynamicSpec,
    ErrorInfo,
    JsonValue,
    Message,
    Reply,
    RunResult,
    RunStatus,
    SimulatorReply,
    SimulatorSpec,
    TurnRecord,
)
from farm.models.failure_class import CHECKPOINT_PREFIX
from farm.run.waiting import left, queued_timeout

__all__ = [
    "DynamicLoop",
    "ScriptedSimulator",
    "Simulator",
    "SimulatorReplyError",
    "SimulatorResolver",
    "combined_output",
    "parse_simulator_reply",
]

SendTurn = Callable[[list[Message], int], Awaitable[Reply]]
"""Sends one turn's new messages to the agent, in the run's conversation; raises to end the run."""
CheckTurn = Callable[[list[Assertion], Reply, int], Awaitable[list[CheckOutcome]]]
"""Evaluates assertions on a reply (the executor's checks, with the run's context)."""


class SimulatorReplyError(Exception):
    """Raised when the simulator's answer cannot be used as the user's next message."""


class Simulator(Protocol):
    """Plays the user of one run (a new one per run: scripted simulators keep their place)."""

    async def ask(self, request: dict[str, JsonValue]) -> Reply:
        """Answer the simulator input ``request``; raise ``AgentError`` (or any error) on failure."""
        ...


class SimulatorResolver(Protocol):
    """Builds the simulator a case's ``simulator`` block names (``farm.run.simulators``)."""

    def __call__(self, spec: SimulatorSpec) -> Simulator:
        """A fresh simulator for one run; raise ``AgentResolutionError`` when it cannot be found."""
        ...


class ScriptedSimulator:
    """``fixed_responses`` played in order, then ``fallback`` (or an error when there is none)."""

    def __init__(self, replies: list[SimulatorReply], fallback: Simulator | None = None) -> None:
        self._replies = list(replies)
        self._next = 0
        self._fallback = fallback

    async def ask(self, request: dict[str, JsonValue]) -> Reply:
        if self._next < len(self._replies):
            reply = self._replies[self._next]
            self._next += 1
            return Reply(structure=reply.model_dump(mode="json"))
        if self._fallback is None:
            raise SimulatorReplyError(f"the scripted simulator ran out of its {len(self._replies)} fixed responses")
        return await self._fallback.ask(request)


def parse_simulator_reply(reply: Reply, *, yao_compat: bool) -> SimulatorReply:
    """The user's next message from the simulator's answer (Yao's ``parseSimulatorResponse``)."""
    if reply.structure is None and reply.text is None:
        raise SimulatorReplyError("the simulator's answer has no content")
    text = reply.as_text()
    data = reply.structure if isinstance(reply.structure, dict) else extract_data(text)
    if not isinstance(data, dict):
        if not text.strip() and not yao_compat:
            raise SimulatorReplyError("the simulator answered an empty message")
        return SimulatorReply(message=text)
    message = data.get("message")
    achieved = data.get("goal_achieved") is True
    if isinstance(message, str) and message:
        return SimulatorReply(message=message, goal_achieved=achieved)
    if yao_compat:
        raise SimulatorReplyError("simulator returned empty message")
    hint = ""
    if "input" in data:  # Yao's design document names the field "input"; its code reads "message"
        hint = " (it has 'input': Yao's design document names the field so, its code reads 'message')"
    raise SimulatorReplyError(f"the simulator's JSON answer has no non-empty 'message'{hint}: {_short(text)}")


def combined_output(reply: Reply) -> str:
    """The text checkpoints are checked on: the answer text and its tool results' ``message``s."""
    parts: list[str] = []
    if reply.text is not None:
        parts.append(reply.text)
    elif reply.structure is not None:
        parts.append(reply.structure if isinstance(reply.structure, str) else json.dumps(reply.structure))
    for call in reply.tool_calls:
        if isinstance(call.result, dict) and isinstance(call.result.get("message"), str):
            parts.append(call.result["message"])
    return "\n".join(p for p in parts if p)


def _short(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _Ended(Exception):
    """Ends a dynamic run early (the simulator failed, or time ran out)."""

    def __init__(self, status: RunStatus, error: ErrorInfo) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error


class DynamicLoop:
    """One dynamic run; fills ``result.turns``, ``result.checkpoints`` and the checkpoint checks."""

    def __init__(self, spec: DynamicSpec, initial: list[Message], result: RunResult, *, yao_compat: bool) -> None:
        self.spec = spec
        self.initial = initial
        self.result = result
        self.yao_compat = yao_compat
        self.points = {cp.id: CheckpointResult(required=cp.required) for cp in spec.checkpoints}
        self.turns: list[TurnRecord] = []
        self.last_failure: dict[str, tuple[int, str]] = {}
        """Each checkpoint's latest failed attempt (turn, message): the run's failure quotes it, while
        ``CheckpointResult.message`` keeps Yao's first."""
        result.turns = self.turns
        result.checkpoints = self.points

    async def run(self, simulator: Simulator, send: SendTurn, check: CheckTurn, history: Callable[[], list[Any]],
                  deadline: float, limit: str) -> tuple[RunStatus, ErrorInfo | None]:
        """Play the conversation; returns the run's status and error (agent failures raise from ``send``).

        ``deadline`` is monotonic; ``limit`` says what it was (``300s``) in timeout messages.
        """
        try:
            return await self._loop(simulator, send, check, history, deadline, limit)
        except _Ended as ended:
            return ended.status, ended.error

    async def _loop(self, simulator: Simulator, send: SendTurn, check: CheckTurn, history: Callable[[], list[Any]],
                    deadline: float, limit: str) -> tuple[RunStatus, ErrorInfo | None]:
        for turn in range(1, self.spec.max_turns + 1):
            if left(deadline) < 0:
                message = f"run timed out after {limit} (checked at the start of turn {turn})"
                return RunStatus.TIMEOUT, ErrorInfo(type="Timeout", message=message)
            started = time.monotonic()
            if turn > 1 or not self.initial:
                said = await self._simulate(simulator, history(), turn, deadline, limit)
                if said.goal_achieved:  # before the agent's turn: the failure is the last turn played
                    return self._conclude(max(turn - 1, 1), "the simulator signaled goal achieved but not all "
                                                            "required checkpoints were reached")
                messages = [Message(role="user", content=said.message)]
            else:
                messages = self.initial
            reply = await send(messages, turn)
            reached = await self._check(check, reply, turn)
            self.turns.append(TurnRecord(
                turn=turn, input=messages[-1].content, output=reply.output, checkpoints_reached=reached,
                duration_ms=round((time.monotonic() - started) * 1000, 3)))
            if self._all_required_reached():
                return self._conclude(turn, "")
        return self._conclude(self.spec.max_turns,
                              f"max turns ({self.spec.max_turns}) exceeded without reaching all checkpoints")

    async def _simulate(self, simulator: Simulator, history: list[Any], turn: int, deadline: float,
                        limit: str) -> SimulatorReply:
        request = self.simulator_input(history, turn)
        try:
            async with queued_timeout(max(left(deadline), 0.0)):
                return parse_simulator_reply(await simulator.ask(request), yao_compat=self.yao_compat)
        except TimeoutError:
            message = f"run timed out after {limit} while the simulator answered turn {turn}"
            raise _Ended(RunStatus.TIMEOUT, ErrorInfo(type="Timeout", message=message)) from None
        except SimulatorReplyError as exc:
            raise _Ended(RunStatus.ERROR, ErrorInfo(type="SimulatorReplyError", message=f"simulator error: {exc}")) \
                from None
        except Exception as exc:  # the simulator's own failure: the run errors, the sweep goes on
            message = f"simulator error: {getattr(exc, 'message', None) or exc or type(exc).__name__}"
            kind = exc.kind.value if isinstance(exc, AgentError) and exc.kind else None
            raise _Ended(RunStatus.ERROR, ErrorInfo(type=type(exc).__name__, message=message, kind=kind)) from None

    def simulator_input(self, history: list[Any], turn: int) -> dict[str, JsonValue]:
        """Yao's ``SimulatorInput``: empty fields left out, as Go's ``omitempty`` does."""
        metadata = self.spec.simulator.metadata
        request: dict[str, JsonValue] = {}
        for key in ("persona", "goal"):
            if isinstance(metadata.get(key), str) and metadata[key]:
                request[key] = metadata[key]
        request |= {"conversation": history, "turn_number": turn, "max_turns": self.spec.max_turns}
        reached = [cp_id for cp_id, found in self.points.items() if found.reached]
        pending = [cp_id for cp_id, found in self.points.items() if not found.reached]
        extra = {k: v for k, v in sorted(metadata.items()) if k not in ("persona", "goal")}
        for key, value in (("checkpoints_reached", reached), ("checkpoints_pending", pending), ("extra", extra)):
            if value:
                request[key] = value
        return request

    async def _check(self, check: CheckTurn, reply: Reply, turn: int) -> list[str]:
        seen = Reply(text=combined_output(reply), tool_calls=reply.tool_calls)
        reached: list[str] = []
        for cp in self.spec.checkpoints:
            found = self.points[cp.id]
            if found.reached or not self._after_met(cp.after):
                continue
            outcomes = await check(cp.assertions, seen, turn) if cp.assertions else []
            failures = [o.message or o.name for o in outcomes if not o.passed]
            if not failures:
                found.reached = found.passed = True
                found.reached_at_turn = turn
                found.message = ""
                reached.append(cp.id)
            else:
                self.last_failure[cp.id] = (turn, "; ".join(failures))
                if not found.message:  # Yao keeps the first failure, for debugging
                    found.message = "; ".join(failures)
        return reached

    def _last_attempt(self, checkpoint: str) -> str:
        if checkpoint not in self.last_failure:
            return "last attempt: never checked"
        turn, message = self.last_failure[checkpoint]
        return f"last attempt (turn {turn}): {message}"

    def _after_met(self, after: list[str]) -> bool:
        # An unknown id counts as met (Yao's code); the default refuses such a case at load time.
        return all(self.points[a].reached for a in after if a in self.points)

    def _all_required_reached(self) -> bool:
        return all(found.reached for found in self.points.values() if found.required)

    def _conclude(self, turn: int, why: str) -> tuple[RunStatus, ErrorInfo | None]:
        """Every checkpoint becomes a check of the run (expected: its assertions; actual: the last
        answer); a missed required one fails it."""
        last = self.turns[-1].output if self.turns else None
        for cp in self.spec.checkpoints:
            found = self.points[cp.id]
            missed = found.required and not found.reached
            message = f"{why}; {self._last_attempt(cp.id)}" if missed else ""
            expected = [a.model_dump(include={"type", "value", "path"}, exclude_none=True) for a in cp.assertions]
            self.result.checks.append(CheckOutcome(name=f"{CHECKPOINT_PREFIX}{cp.id}", passed=not missed,
                                                   message=message, turn=turn, expected=expected or None, actual=last))
        return (RunStatus.FAILED if self.result.failed_checks else RunStatus.PASSED), None
