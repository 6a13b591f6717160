"""The farm's data: test cases, agent replies, run outcomes and statistics.

Every model here round-trips through JSON unchanged (``Model.model_validate_json(
m.model_dump_json()) == m``), because every one of them crosses the Celery queue. Both suite
formats (Yao JSONL, neuro-san HOCON) load into the same ``Case``.
"""

from __future__ import annotations

import enum
import traceback
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

JsonValue = Any
"""Any JSON value: None, bool, int, float, str, list, dict."""


class FarmModel(BaseModel):
    """Base of all farm models: strict about unknown fields, immutable by convention."""

    model_config = ConfigDict(extra="forbid", frozen=False)


# ----------------------------------------------------------------------------------- messages


class Message(FarmModel):
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


class Assertion(FarmModel):
    """One Yao assertion (``assert`` entry, or the ``equals`` check made from ``expected``).

    Validated at load time by ``farm.checks.spec``; evaluated by ``farm.checks.yao``.
    """

    type: str = "equals"
    """``equals``, ``contains``, ``not_contains``, ``regex``, ``type``, ``json_path``, ``script``,
    ``agent``, ``tool_called`` or ``tool_result``."""
    value: JsonValue = None
    has_value: bool = False
    """Whether ``value`` was given (``null`` is a legitimate value to compare with)."""
    path: str | None = None
    """JSONPath, for ``json_path``."""
    script: str | None = None
    """``module:function`` or ``file.py:function``, for ``script``."""
    use: str | None = None
    """Judge for ``agent``: a connector id or ``agents:<agent id>``."""
    message: str | None = None
    """Custom failure message."""
    negate: bool = False
    where: str = ""
    """Key path of the assertion in its file (``assert[1]``), used in failure messages."""


class StockTest(FarmModel):
    """One neuro-san stock test applied to one value of a reply.

    ``target`` picks the part of the reply; ``key`` is the path inside ``sly_data`` or
    ``structure`` (empty for ``text``). ``values`` are ANDed.
    """

    target: Literal["text", "sly_data", "structure"]
    key: list[str] = Field(default_factory=list)
    test: str
    """Lower-cased stock test name: ``value``, ``not_value``, ``less``, ``not_less``, ``greater``,
    ``not_greater``, ``keywords``, ``not_keywords``, ``gist``, ``not_gist``."""
    values: list[JsonValue]
    where: str = ""
    """Key path in the HOCON file (``interactions[0].response.text.keywords``)."""


class CheckOutcome(FarmModel):
    """What one check concluded about one reply."""

    name: str
    """The check, as a user reads it: ``contains``, ``text.keywords``, ``structure.answer.value``."""
    passed: bool
    message: str = ""
    actual: JsonValue = None
    """The value the check looked at (truncated when large)."""
    expected: JsonValue = None
    turn: int = 1
    """1-based turn the check belongs to."""
    verdict: str | None = None
    """Judge checks: ``pass``, ``fail`` or ``equivocal``."""
    reason: str | None = None
    """Judge checks: the judge's reason."""


# ------------------------------------------------------------------------------------- cases


class SuccessRatio(FarmModel):
    """neuro-san ``success_ratio`` ``k/n``: run ``n`` times, pass with ``k`` passes."""

    k: int
    n: int


class Turn(FarmModel):
    """One exchange with the agent: what to send, and the checks on the reply."""

    messages: list[Message]
    """Messages this turn adds to the conversation (a Yao history may hold several)."""
    sly_data: dict[str, JsonValue] | None = None
    timeout_s: float | None = None
    chat_filter: Literal["MINIMAL", "MAXIMAL"] | None = None
    continue_conversation: bool = True
    """False: the *next* turn starts a fresh conversation (neuro-san's rule)."""
    assertions: list[Assertion] = Field(default_factory=list)
    stock_tests: list[StockTest] = Field(default_factory=list)


class Case(FarmModel):
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
    """Whole-run timeout (``timeout`` / ``timeout_in_seconds``); None: the sweep default."""
    agent: str | None = None
    """Agent reference from the file (neuro-san ``agent`` key), before resolution."""
    connection: Literal["direct", "http", "https"] | None = None
    success_ratio: SuccessRatio | None = None


# ------------------------------------------------------------------------------------ replies


class ToolCall(FarmModel):
    """A tool call the agent made while answering."""

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: JsonValue = None
    result: JsonValue = None
    error: str | None = None


class Reply(FarmModel):
    """What an agent answered to one turn. Every adapter returns one."""

    text: str | None = None
    structure: JsonValue = None
    sly_data: dict[str, JsonValue] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: dict[str, JsonValue] | None = None
    """Tokens and cost where the agent reports them."""
    raw: JsonValue = None
    """The raw exchange, for verbose reports."""

    @property
    def output(self) -> JsonValue:
        """The case's output: ``structure`` when not None, else ``text``, else None."""
        if self.structure is not None:
            return self.structure
        return self.text


# --------------------------------------------------------------------------------------- runs


class RunStatus(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"


MAX_TRACEBACK_CHARS = 4000
"""A run's traceback keeps this many characters of its end (the innermost frames say most)."""

MAX_TRACEBACK_FRAMES = 20
"""Frames a run's traceback keeps, innermost last."""


class ErrorInfo(FarmModel):
    """Why a run errored or timed out."""

    type: str
    """The exception's class name (``ValueError``), ``AgentError`` or ``Timeout``."""
    message: str
    traceback: str | None = None
    """The innermost ``MAX_TRACEBACK_FRAMES`` frames, at most ``MAX_TRACEBACK_CHARS`` characters."""

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorInfo:
        """The exception's type, message and bounded traceback (call it inside the ``except``)."""
        text = "".join(traceback.format_exception(exc, limit=-MAX_TRACEBACK_FRAMES))
        if len(text) > MAX_TRACEBACK_CHARS:
            text = "…" + text[-(MAX_TRACEBACK_CHARS - 1):]
        return cls(type=type(exc).__name__, message=str(exc) or type(exc).__name__, traceback=text)


class RunResult(FarmModel):
    """The outcome of one run of one case (all its turns)."""

    case_id: str
    run: int
    """1-based run index."""
    status: RunStatus
    duration_ms: float = 0.0
    output: JsonValue = None
    """Output of the last turn that answered."""
    checks: list[CheckOutcome] = Field(default_factory=list)
    """Every check evaluated, passed or not."""
    error: ErrorInfo | None = None
    retries: int = 0
    """Transient faults retried during this run."""
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

    @property
    def failed_checks(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]


# --------------------------------------------------------------------------------- statistics


class StabilityClass(enum.StrEnum):
    STABLE = "stable"
    MOSTLY_STABLE = "mostly_stable"
    UNSTABLE = "unstable"
    HIGHLY_UNSTABLE = "highly_unstable"
    BROKEN = "broken"
    """Every run failed: consistent, not random (SPEC 7); the Yao table's classes are for 0 < rate."""


class RunDetail(FarmModel):
    """One run as kept in a case's statistics (bounded: see ``farm.stats``)."""

    run: int
    status: RunStatus
    duration_ms: float
    output: JsonValue = None
    error: str | None = None
    error_type: str | None = None
    """The exception's class name for an ``error`` run (``ErrorInfo.type``)."""
    traceback: str | None = None
    """Bounded traceback, kept once per distinct error of the case (the first run that had it)."""
    failed_checks: list[CheckOutcome] = Field(default_factory=list)
    judged_checks: list[CheckOutcome] = Field(default_factory=list)
    """Judge checks that passed, kept for their verdict and reason (failed ones are above)."""
    retries: int = 0

    @property
    def error_line(self) -> str:
        """The error as one line for people: ``ValueError: bad input`` (the type when it says more)."""
        message = self.error or ""
        if self.status is RunStatus.ERROR and self.error_type not in (None, "AgentError"):
            return f"{self.error_type}: {message}"
        return message



class FailureReason(FarmModel):
    """Why runs of a case failed, and how many runs failed that way."""

    reason: str
    """``check: expected …`` for a failed check, ``status: ErrorType: message`` for an error."""
    count: int


class CaseStats(FarmModel):
    """Per-case statistics of a sweep (SPEC 7)."""

    id: str
    suite: str = ""
    source: str = ""
    input: JsonValue = None
    expected: JsonValue = None
    runs: int
    """Runs that finished (any status, skipped included)."""
    passed: int
    failed: int
    """Failed, error and timeout runs."""
    errors: int = 0
    timeouts: int = 0
    skipped: int = 0
    pass_rate: float
    """0–100, of the runs that were not skipped."""
    pass_rate_ci: tuple[float, float]
    """95 % Wilson interval of the pass rate, 0–100."""
    consistency: float
    stable: bool
    stability_class: StabilityClass
    label: Literal["stable", "flaky", "broken", "skipped"]
    """``flaky``: 0 < pass rate < 100; ``broken``: always fails."""
    runs_planned: int | None = None
    """Runs the plan asked for; more than ``runs`` when the sweep stopped before the case finished."""
    required_passes: int
    """Passes needed for the case to pass (from ``success_ratio``, ``--min-pass-rate``)."""
    case_passed: bool
    """The verdict: passes ≥ required_passes (skipped cases: True, counted neither way)."""
    avg_duration_ms: float
    min_duration_ms: float
    max_duration_ms: float
    std_deviation_ms: float
    retries: int = 0
    distinct_outputs: int = 0
    """Distinct normalised outputs among the scored runs (errors and timeouts count as one "no
    output"); exact up to ``farm.stats.DEFAULT_MAX_DISTINCT_OUTPUTS``, a lower bound beyond."""
    failure_reasons: list[FailureReason] = Field(default_factory=list)
    """The most frequent reasons runs failed, most frequent first (``farm.stats.reasons``)."""
    pass_at_k: dict[str, float | None] = Field(default_factory=dict)
    """Unbiased pass@k by k (as a string): the chance that at least one of k runs passes,
    1 − C(n−c, k)/C(n, k) over the n scored runs, c passed; None when n < k."""
    pass_hat_k: dict[str, float | None] = Field(default_factory=dict)
    """Unbiased pass^k by k: the chance that all of k runs pass, C(c, k)/C(n, k); None when n < k."""
    usage: dict[str, int] | None = None
    """The agent's tokens over the case's runs (SPEC 13); None: no run reported any."""
    cost_usd: float | None = None
    """What the agent's calls cost over the case's runs; None: unknown for some run."""
    judge_usage: dict[str, int] | None = None
    """Tokens of the case's judge calls, apart; None: no judge was called."""
    judge_cost_usd: float | None = None
    """What the judge calls cost; None: unknown, or no judge was called."""
    cost_per_passing_run: float | None = None
    """Agent and judge cost over the passing runs; None: unknown, or no run passed."""
    adaptive: bool = False
    """``--adaptive``: the case stopped once its verdict was settled, so its pass rate is biased
    by stopping (compare such cases on verdicts only)."""
    decided_after: int | None = None
    """Adaptive: the run that settled the verdict (runs in flight then still count)."""
    adaptive_verdict: Literal["pass", "fail", "inconclusive"] | None = None
    """Adaptive: the rule's verdict; ``inconclusive`` (the SPRT undecided after every planned
    run) counts as failed."""
    runs_saved: int = 0
    """Adaptive: planned runs not made because the verdict was settled."""
    content_hash: str | None = None
    """Digest of the case as written (turns, checks, input, settings; not its file or line):
    comparisons flag a case whose test changed (``farm.stats.fingerprint``)."""
    run_details: list[RunDetail] = Field(default_factory=list)
    run_details_truncated: int = 0
    """How many runs were counted but not kept in ``run_details``."""


class SweepSummary(FarmModel):
    """Sweep-wide figures (SPEC 7)."""

    total_cases: int
    total_runs: int
    runs_per_case: int
    overall_pass_rate: float
    stable_cases: int
    unstable_cases: int
    passed_cases: int
    failed_cases: int
    skipped_cases: int
    flaky_cases: int
    broken_cases: int
    duration_ms: float
    by_status: dict[str, int]
    """Run counts by status: passed, failed, error, timeout, skipped."""
    usage: dict[str, int] | None = None
    """The agent's tokens over the sweep (SPEC 13); None: no run reported any."""
    cost_usd: float | None = None
    """What the agent's calls cost; None: unknown for some case."""
    judge_usage: dict[str, int] | None = None
    """Tokens of the judge calls, apart; None: no judge was called."""
    judge_cost_usd: float | None = None
    """What the judge calls cost; None: unknown, or no judge was called."""
    cost_per_passing_run: float | None = None
    """Agent and judge cost over the passing runs; None: unknown, or no run passed."""
    runs_saved: int = 0
    """``--adaptive``: planned runs not made because their cases' verdicts were settled."""
    skipped_ids: list[str] = Field(default_factory=list)
    """Cases the suite skips (``skip: true``): counted in ``skipped_cases``, listed here, and given
    no result row, pass rate or stability class (SPEC 10)."""


class SweepReport(FarmModel):
    """The whole report of a sweep: what every renderer takes."""

    summary: SweepSummary
    environment: dict[str, JsonValue]
    results: list[CaseStats]
    """Cases that ran, in plan order; skipped cases are listed in ``summary.skipped_ids`` only."""
    metadata: dict[str, JsonValue]
    """``sweep_id``, ``agent_id``, ``connector``, ``started_at``, ``completed_at``, ``version``,
    ``comparison`` (``documented`` or ``neuro-san-compat``), ``min_pass_rate``, …"""
