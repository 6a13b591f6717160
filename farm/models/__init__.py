"""The farm's data: test cases, agent replies, run outcomes and statistics.

Every model here round-trips through JSON unchanged (``Model.model_validate_json(
m.model_dump_json()) == m``), because every one of them crosses the Celery queue. Both suite
formats (Yao JSONL, neuro-san HOCON) load into the same ``Case``.
"""

from __future__ import annotations

import json
import traceback
from typing import Literal

from pydantic import ConfigDict, Field

from farm.errors import AgentError

# The base models, the dynamic-case models and the statistics live in their own modules (they
# build on ``farm.models.base``, never on this module); all are re-exported here, so
# ``from farm.models import CaseStats`` goes on working.
from farm.models.base import Assertion as Assertion
from farm.models.base import CheckOutcome as CheckOutcome
from farm.models.base import FarmModel as FarmModel
from farm.models.base import JsonValue as JsonValue
from farm.models.base import PerCaseModel as PerCaseModel
from farm.models.base import RunStatus as RunStatus
from farm.models.base import empty_list
from farm.models.dynamic import *  # noqa: F403
from farm.models.dynamic import CheckpointResult, DynamicSpec, TurnRecord
from farm.models.envelope import FleetFacts as FleetFacts
from farm.models.envelope import HistoryRecord as HistoryRecord
from farm.models.envelope import SweepEnvelope as SweepEnvelope
from farm.models.load import InFlightCount as InFlightCount
from farm.models.load import LoadBias as LoadBias
from farm.models.load import LoadBiasSummary as LoadBiasSummary
from farm.models.load import Ramp as Ramp
from farm.models.load import RampLevel as RampLevel
from farm.models.matrix import *  # noqa: F403
from farm.models.served import Served as Served
from farm.models.served import ServedCounts as ServedCounts
from farm.models.start import SweepStart as SweepStart
from farm.models.stats import *  # noqa: F403
from farm.models.trajectory import Divergence as Divergence
from farm.models.trajectory import ToolCall as ToolCall
from farm.models.trajectory import TrajectoryPath as TrajectoryPath

# ----------------------------------------------------------------------------------- messages


class Message(PerCaseModel):
    """One OpenAI-style chat message."""

    model_config = ConfigDict(extra="allow")

    role: str = "user"
    """``system``, ``user``, ``assistant`` or ``tool``."""
    content: str | list[dict[str, JsonValue]] | None = None
    """Plain text, or a ContentPart array (``[{"type": "text", "text": …}, …]``)."""

    def text(self) -> str:
        """The message's text: the string content, or the text parts joined."""
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "".join(str(p.get("text", "")) for p in self.content if isinstance(p, dict))


# ------------------------------------------------------------------------------------ checks


class StockTest(FarmModel):
    """One neuro-san stock test applied to one value of a reply.

    ``target`` picks the part of the reply; ``key`` is the path inside ``sly_data`` or
    ``structure`` (empty for ``text``). ``values`` are ANDed.
    """

    target: Literal["text", "sly_data", "structure"]
    key: list[str] = Field(default_factory=empty_list)
    test: str
    """Lower-cased stock test name: ``value``, ``not_value``, ``less``, ``not_less``, ``greater``,
    ``not_greater``, ``keywords``, ``not_keywords``, ``gist``, ``not_gist``."""
    values: list[JsonValue]
    where: str = ""
    """Key path in the HOCON file (``interactions[0].response.text.keywords``)."""


# ------------------------------------------------------------------------------------- cases


class SuccessRatio(FarmModel):
    """neuro-san ``success_ratio`` ``k/n``: run ``n`` times, pass with ``k`` passes."""

    k: int
    n: int


class Turn(PerCaseModel):
    """One exchange with the agent: what to send, and the checks on the reply."""

    messages: list[Message]
    """Messages this turn adds to the conversation (a Yao history may hold several)."""
    sly_data: dict[str, JsonValue] | None = None
    timeout_s: float | None = None
    chat_filter: Literal["MINIMAL", "MAXIMAL"] | None = None
    continue_conversation: bool = True
    """False: the *next* turn starts a fresh conversation (neuro-san's rule)."""
    assertions: list[Assertion] = Field(default_factory=empty_list)
    stock_tests: list[StockTest] = Field(default_factory=empty_list)


class Case(PerCaseModel):
    """One test case of either format."""

    id: str
    format: Literal["yao", "neuro-san", "message"]
    source: str = ""
    """The suite file it came from ('' for a literal message)."""
    line: int | None = None
    """1-based line in a JSONL suite."""
    suite: str = ""
    """Suite name (path relative to the ``-i`` root, without extension); JUnit classname."""
    base_dir: str = ""
    """Directory of the suite file: ``script`` paths and agent walk-up start here."""
    turns: list[Turn]
    input: JsonValue = None
    """The case's input as written in the file (for reports and ``script`` checks)."""
    expected: JsonValue = None
    user: str | None = None
    team: str | None = None
    metadata: dict[str, JsonValue] | None = None
    skip: bool = False
    timeout_s: float | None = None
    """Whole-run timeout (Yao's ``timeout``); None: the sweep default."""
    test_timeout_s: float | None = None
    """neuro-san's top-level ``timeout_in_seconds``: all runs of the test together (``farm.sweep.deadlines``)."""
    agent: str | None = None
    """Agent reference from the file (neuro-san ``agent`` key), before resolution."""
    connection: Literal["direct", "http", "https", "grpc", "service", "mcp"] | None = None
    """neuro-san ``connections`` entry; grpc and service cases are skipped (not spoken)."""
    success_ratio: SuccessRatio | None = None
    name: str | None = None
    """A Yao case's ``name`` (its own tests write one): shown beside the id."""
    options: dict[str, JsonValue] | None = None
    """Yao's per-case ``options`` (``connector``, ``mode``, ``metadata``, …), passed to the agent."""
    before: str | None = None
    """Yao ``before`` hook: a Python callable (``module:function``), run before each run."""
    after: str | None = None
    """Yao ``after`` hook, run after each run whose ``before`` succeeded."""
    dynamic: DynamicSpec | None = None
    """A Yao dynamic case: a simulator plays the user until the checkpoints are reached."""
    skip_reason: str | None = None
    """Why a case is skipped when the farm decided it (e.g. a connection it does not speak)."""
    load_note: str | None = None
    """What the user is told about a case as it is loaded (e.g. connections that do not apply)."""
    env_refs: list[str] | None = None
    """Secret-named environment variables the case's text still holds as ``${?NAME}``: read where
    the run runs, never in the plan (``farm.agents.secrets.resolve_deferred``, SPEC 26)."""
    arm: str | None = None
    """A matrix sweep's planned copy: the arm it runs in (its id is then ``T1@ARM``, SPEC 22)."""
    arm_options: dict[str, JsonValue] | None = None
    """The arm's options (``model``, ``temperature``, …), given to the agent over ``options``."""


# ------------------------------------------------------------------------------------ replies


class Reply(FarmModel):
    """What an agent answered to one turn. Every adapter returns one."""

    text: str | None = None
    structure: JsonValue = None
    sly_data: dict[str, JsonValue] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=empty_list)
    usage: dict[str, JsonValue] | None = None
    """Tokens and cost where the agent reports them."""
    raw: JsonValue = None
    """The raw exchange, for verbose reports."""
    served: Served | None = None
    """What the provider says served the answer (SPEC 25); None: nothing reported."""

    @property
    def output(self) -> JsonValue:
        """The case's output: ``structure`` when not None, else ``text``, else None."""
        if self.structure is not None:
            return self.structure
        return self.text

    def as_text(self) -> str:
        """The answer as one text: ``text``, else ``structure`` as JSON, else ``''``."""
        if self.text is not None:
            return self.text
        return "" if self.structure is None else json.dumps(self.structure, ensure_ascii=False)


# --------------------------------------------------------------------------------------- runs


MAX_TRACEBACK_CHARS = 4000
"""A run's traceback keeps this many characters of its end (the innermost frames say most)."""

MAX_TRACEBACK_FRAMES = 20
"""Frames a run's traceback keeps, innermost last."""


class ErrorInfo(FarmModel):
    """Why a run errored or timed out."""

    type: str
    """The exception's class name (``ValueError``), ``AgentError`` or ``Timeout``."""
    message: str
    kind: str | None = None
    """An ``AgentError``'s ``FaultKind`` (``connect``, ``5xx``, ``429``, …): what failed on the way
    to the agent; the run's failure class is read from it."""
    traceback: str | None = None
    """The innermost ``MAX_TRACEBACK_FRAMES`` frames, at most ``MAX_TRACEBACK_CHARS`` characters."""

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorInfo:
        """The exception's type, message and bounded traceback (call it inside the ``except``)."""
        text = "".join(traceback.format_exception(exc, limit=-MAX_TRACEBACK_FRAMES))
        if len(text) > MAX_TRACEBACK_CHARS:
            text = "…" + text[-(MAX_TRACEBACK_CHARS - 1):]
        return cls(type=type(exc).__name__, message=str(exc) or type(exc).__name__, traceback=text)

    @classmethod
    def of_agent_error(cls, exc: AgentError) -> ErrorInfo:
        """An adapter's error: its message and fault kind, no traceback (the adapter's own, not news)."""
        return cls(type="AgentError", message=exc.message, kind=exc.kind.value if exc.kind else None)


class RunResult(FarmModel):
    """The outcome of one run of one case (all its turns)."""

    case_id: str
    run: int
    """1-based run index."""
    status: RunStatus
    duration_ms: float = 0.0
    output: JsonValue = None
    """Output of the last turn that answered."""
    checks: list[CheckOutcome] = Field(default_factory=empty_list)
    """Every check evaluated, passed or not."""
    error: ErrorInfo | None = None
    retries: int = 0
    """Transient faults retried during this run."""
    queued_ms: float | None = None
    """Time the run's calls waited for a slot in fleet control (SPEC 15): not in ``duration_ms``
    nor in any timeout; None: made outside fleet control."""
    usage: dict[str, int] | None = None
    """The agent's tokens summed over the turns (``input_tokens``, ``output_tokens``,
    ``cached_tokens``, ``reasoning_tokens``; a count nobody reported is absent); None: none reported."""
    turn_usage: list[dict[str, int]] | None = None
    """The same per answered turn ({} for a turn that reported none); None: no turn reported any."""
    cost_usd: float | None = None
    """What the agent's calls cost (price table, else what the agent reported); None: unknown."""
    judge_usage: dict[str, int] | None = None
    """Tokens of this run's judge calls, apart from the agent's; None: no judge was called."""
    judge_cost_usd: float | None = None
    """What the judge calls cost; None: unknown, or no judge was called."""
    turns_completed: int = 0
    started_at: str | None = None
    sweep_id: str | None = None
    failure_class: str | None = None
    """Why a run did not pass, decided before any LLM (SPEC 14.2): ``infra:…``, ``harness:…``,
    ``assertion:<type>[:<path or checkpoint>]``, ``judge:…`` or ``crashed``."""
    failed_turn: int | None = None
    """1-based turn the failure happened in."""
    turns: list[TurnRecord] | None = None
    """Dynamic runs: the conversation, turn by turn."""
    checkpoints: dict[str, CheckpointResult] | None = None
    """Dynamic runs: every checkpoint by id, in the case's order."""
    trajectory: list[ToolCall] | None = None
    """The tool calls of all its turns, in order (SPEC 21; bounded: ``farm.run.trajectory``);
    None: the run made none."""
    served: Served | None = None
    """What served the run's last answered turn (SPEC 25: model, fingerprint, request id, commit)."""
    in_flight: int | None = None
    """The sweep's runs in flight as this one began, itself included (SPEC 25, ``farm.models.load``);
    None: not known (a run recorded before it was kept)."""
    arm: str | None = None
    """A matrix sweep's arm (SPEC 22): ``case_id`` is then the arm's copy, ``T1@ARM``."""

    @property
    def failed_checks(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]

