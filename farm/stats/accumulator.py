"""Incremental per-case statistics: feed ``RunResult``s one by one, read ``CaseStats``.

The same accumulator runs in the in-process executor and in the ``farm.aggregate`` task, which
rebuilds it from the results stored in Redis. Memory grows with cases, not runs: counters, a
running mean and variance (Welford), a bitmap of counted run indices, a bounded count of
distinct output digests, and at most ``max_details`` kept runs. A case planned with an adaptive
rule (``--adaptive``) is decided by it as its runs come in (``decision``); the runs still in flight
then count too, and the verdict stays the rule's. Usage and cost are summed by ``CostTotals``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

from farm.models import (
    Case,
    CaseStats,
    CheckOutcome,
    RunDetail,
    RunResult,
    RunStatus,
    ServedCounts,
    TurnRecord,
    own_case_id,
    run_status,
)
from farm.models.failure_class import classified, unreached
from farm.stats.adaptive import Decision, runs_needed
from farm.stats.costs import CostTotals
from farm.stats.criteria import CriteriaTally
from farm.stats.failures import CheckpointTally, FailureTally
from farm.stats.fingerprint import case_fingerprint
from farm.stats.latency import DurationHistogram
from farm.stats.load_bias import InFlightTally
from farm.stats.measures import label_for, percent, round_ratio_half_up, stability_class, wilson_percent
from farm.stats.outputs import (
    DEFAULT_MAX_DISTINCT_OUTPUTS,
    DEFAULT_MAX_OUTPUT_CHARS,
    ModeCounter,
    bounded,
    bounded_text,
    output_digest,
)
from farm.stats.passk import DEFAULT_PASS_K, pass_k_figures
from farm.stats.plan import CasePlan
from farm.stats.reasons import ReasonCounter
from farm.stats.retry_bias import RetryTally
from farm.stats.semantic import SemanticSample, semantic_text
from farm.stats.trajectory import MAX_DETAIL_CALLS, TrajectoryTally

DEFAULT_MAX_RUN_DETAILS = 100
"""Runs kept in full per case; the others are counted in ``run_details_truncated``."""

MAX_CHECKS_PER_DETAIL = 20
"""Failed checks kept per kept run."""

MAX_TRACEBACKS_PER_CASE = 5
"""Distinct errors of a case whose traceback its kept runs hold (the first run of each)."""

_NO_OUTPUT = frozenset({RunStatus.ERROR, RunStatus.TIMEOUT})


class _Durations:
    """Welford's running mean and population variance, with min and max."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)
        self.min = min(self.min, x)
        self.max = max(self.max, x)

    def figures(self) -> dict[str, float]:
        if self.n == 0:
            return dict.fromkeys(("avg", "min", "max", "std"), 0.0)
        std = math.sqrt(max(self.m2, 0.0) / self.n)
        return {"avg": round(self.mean, 1), "min": round(self.min, 1), "max": round(self.max, 1),
                "std": round(std, 1)}


class _Details:
    """At most ``cap`` kept runs; failing runs push out passing ones, so failures stay visible.

    Each kept run is held as its ``RunDetail``'s JSON, defaults left out (about a tenth of
    the model's memory: 1,000 cases keep 100k of them); ``sorted`` makes the models again. The
    JSON round trip is the one a distributed sweep's results already take through Redis.
    """

    def __init__(self, cap: int) -> None:
        if cap < 0:
            raise ValueError(f"max_details must be ≥ 0, got {cap}")
        self.cap = cap
        self.passing: list[tuple[int, str]] = []
        self.others: list[tuple[int, str]] = []
        self.truncated = 0
        self.tracebacks: set[tuple[str | None, str | None]] = set()

    def offer(self, result: RunResult) -> None:
        """Keep ``result`` as a detail if there is room for it (built only then: it costs)."""
        passing = run_status(result.status) is RunStatus.PASSED
        if len(self.passing) + len(self.others) < self.cap:
            (self.passing if passing else self.others).append(self._packed(result))
            return
        self.truncated += 1
        if not passing and self.passing:
            self.passing.pop()
            self.others.append(self._packed(result))

    def _packed(self, result: RunResult) -> tuple[int, str]:
        # Defaults left out: half the JSON, and the models made from it carry a smaller
        # fields-set (768 B instead of 1.28 KB each for a plain passing run).
        detail = run_detail(result)
        if detail.traceback is not None:
            # one traceback per distinct error: fifty runs failing alike need not keep fifty copies
            signature = (detail.error_type, detail.error)
            if signature in self.tracebacks or len(self.tracebacks) >= MAX_TRACEBACKS_PER_CASE:
                detail.traceback = None
            else:
                self.tracebacks.add(signature)
        return result.run, detail.model_dump_json(exclude_defaults=True)

    def sorted(self) -> list[RunDetail]:
        kept = sorted(self.passing + self.others, key=lambda packed: packed[0])
        return [RunDetail.model_validate_json(data) for _run, data in kept]


def _bounded_check(check: CheckOutcome) -> CheckOutcome:
    return check.model_copy(update={
        "message": bounded_text(check.message) or "",
        "actual": bounded(check.actual),
        "expected": bounded(check.expected),
        "reason": bounded_text(check.reason),
    })


def run_detail(result: RunResult, limit: int = DEFAULT_MAX_OUTPUT_CHARS) -> RunDetail:
    """The bounded record of one run kept in ``CaseStats.run_details``."""
    error = error_type = trace = None
    if result.error is not None:
        error = bounded_text(result.error.message or result.error.type, limit)
        error_type, trace = result.error.type, result.error.traceback
    failed = result.failed_checks[:MAX_CHECKS_PER_DETAIL]
    judged = [c for c in result.checks if c.passed and c.verdict is not None][:MAX_CHECKS_PER_DETAIL]
    return RunDetail(
        run=result.run, status=result.status, duration_ms=result.duration_ms,
        output=bounded(result.output, limit), error=error, error_type=error_type, traceback=trace,
        failed_checks=[_bounded_check(c) for c in failed],
        judged_checks=[_bounded_check(c) for c in judged], retries=result.retries,
        failure_class=result.failure_class, failed_turn=result.failed_turn, queued_ms=result.queued_ms,
        turns=None if result.turns is None else [_bounded_turn(t, limit) for t in result.turns],
        checkpoints=result.checkpoints,
        trajectory=None if result.trajectory is None else result.trajectory[:MAX_DETAIL_CALLS],
        served=result.served, in_flight=result.in_flight,
    )


def _bounded_turn(turn: TurnRecord, limit: int) -> TurnRecord:
    return turn.model_copy(update={"input": bounded(turn.input, limit), "output": bounded(turn.output, limit)})


def _classed(result: RunResult, status: RunStatus) -> RunResult:
    if result.failure_class is None and status not in (RunStatus.PASSED, RunStatus.SKIPPED):
        # made before runs were classed (an older journal or report) or by hand: classed here, the same way
        return classified(result)
    return result


def kept_details(results: Iterable[RunResult], cap: int) -> list[RunDetail]:
    """The run details a ``CaseAccumulator`` with ``max_details=cap`` keeps of one case's ``results``
    (given in the order it was fed them; a run index seen before is not counted again), without
    building the accumulator: a case's kept runs read back from the journal."""
    details, seen = _Details(cap), set()
    for result in results:
        if result.run not in seen:
            seen.add(result.run)
            details.offer(_classed(result, run_status(result.status)))
    return details.sorted()


class CaseAccumulator:
    """Statistics of one case, built from its run results in any order, each counted once."""

    def __init__(self, case: Case, plan: CasePlan, *, max_details: int = DEFAULT_MAX_RUN_DETAILS,
                 max_distinct_outputs: int = DEFAULT_MAX_DISTINCT_OUTPUTS,
                 pass_k: tuple[int, ...] = DEFAULT_PASS_K, semantic: bool = True) -> None:
        """``semantic=False``: no sample of answers for the semantic figures (nothing is embedded; the
        status is ``off``): a sweep run with ``--no-semantic``, or an accumulator built only to read
        a case's run details back (``run_details``)."""
        self.case_id = case.id
        self._case = {"id": own_case_id(case.id, case.arm), "suite": case.suite, "source": case.source,
                      "input": case.input, "expected": case.expected, "content_hash": case_fingerprint(case)}
        self._arm = case.arm
        self.plan = plan
        self.pass_k = pass_k
        self._seen = bytearray((plan.runs + 8) // 8)
        self._counted = 0
        self._status = dict.fromkeys(RunStatus, 0)
        self._retries = 0
        self._retry_split = RetryTally()
        self._unreached = 0
        self._queued_ms = 0.0
        self._durations = _Durations()
        self._histogram = DurationHistogram() if case.arm else None
        self._outputs = ModeCounter(max_distinct_outputs)
        self._meanings = SemanticSample(enabled=semantic)
        self._details = _Details(max_details)
        self._reasons = ReasonCounter()
        self._failures = FailureTally()
        self._checkpoints = CheckpointTally()
        self._criteria = CriteriaTally(case)
        self._paths = TrajectoryTally()
        self._served = ServedCounts()
        self._load = InFlightTally()
        self._costs = CostTotals()
        self._rule = plan.stopping_rule()
        self.decision: Decision | None = None
        """The adaptive rule's verdict once settled (never for a case planned without one)."""

    def _claim(self, run: int) -> bool:
        if not 1 <= run <= self.plan.runs:
            raise ValueError(f"case {self.case_id!r}: run {run} is outside 1..{self.plan.runs}")
        byte, bit = divmod(run, 8)
        if self._seen[byte] & (1 << bit):
            return False
        self._seen[byte] |= 1 << bit
        return True

    def add(self, result: RunResult) -> bool:
        """Count ``result``; False (nothing changes) when its run index was already counted."""
        if result.case_id != self.case_id:
            raise ValueError(f"result of case {result.case_id!r} fed to the accumulator of {self.case_id!r}")
        if not self._claim(result.run):
            return False
        status = run_status(result.status)
        result = _classed(result, status)
        self._counted += 1
        self._status[status] += 1
        self._retries += result.retries
        self._retry_split.add(result)
        self._unreached += unreached(result)
        self._queued_ms += result.queued_ms or 0.0
        if status is not RunStatus.SKIPPED:
            self._durations.add(result.duration_ms)
            if self._histogram is not None:
                self._histogram.add(result.duration_ms)
            output = None if status in _NO_OUTPUT else result.output
            digest = output_digest(output)
            self._outputs.add(digest)
            if status not in _NO_OUTPUT:
                meaning = semantic_text(result)  # a one-turn run's: its output itself, whose digest is made
                self._meanings.add(meaning, digest if meaning is output else None)
            self._reasons.add(result)
            self._costs.add_run(result)
        self._details.offer(result)
        self._failures.add(result)
        self._checkpoints.add(result)
        self._criteria.add(result)
        self._paths.add(result)
        self._served.add(result.served)
        self._load.add(result)
        if self._rule is not None and self.decision is None:
            self.decision = self._rule.decide(*self._tally())
        return True

    @property
    def count(self) -> int:
        """Distinct runs counted so far."""
        return self._counted

    @property
    def done(self) -> bool:
        """Every planned run is in."""
        return self._counted >= self.plan.runs

    @property
    def cannot_pass(self) -> bool:
        """Even if every run still missing passed, the case would miss its requirement."""
        if self.decision is not None:
            return self.decision.verdict != "pass"
        return self.plan.cannot_pass(self._counted, self._status[RunStatus.PASSED])

    def runs_needed(self) -> int:
        """Runs still certainly needed: before the adaptive rule can decide (0 once it has), or,
        without one, the planned runs not counted yet."""
        if self._rule is None:
            return max(self.plan.runs - self._counted, 0)
        return 0 if self.decision is not None else runs_needed(self._rule, *self._tally())

    def _tally(self) -> tuple[int, int]:
        """(passed, failed) counted runs, the way the adaptive rules count them (skipped: neither)."""
        passed = self._status[RunStatus.PASSED]
        return passed, self._counted - self._status[RunStatus.SKIPPED] - passed

    def _verdict_figures(self, passed: int, label: str) -> dict[str, object]:
        """``case_passed`` and the adaptive fields: a decided case has its rule's verdict."""
        figures: dict[str, object] = {"case_passed": label == "skipped" or passed >= self.plan.required}
        if self._rule is None:
            return figures
        figures["adaptive"] = True
        if self.decision is not None:
            figures.update(case_passed=self.decision.verdict == "pass", adaptive_verdict=self.decision.verdict,
                           decided_after=self.decision.decided_after, runs_saved=self.plan.runs - self._counted)
        return figures

    def _consistency(self, scored: int) -> float:
        if scored <= 1:
            return 1.0
        return round_ratio_half_up(self._outputs.mode_count(), scored, 3)

    def run_details(self) -> list[RunDetail]:
        """The kept run details alone (the rest of ``stats`` is not computed)."""
        return self._details.sorted()

    def stats(self) -> CaseStats:
        """The case's statistics so far (final once ``done``)."""
        s = self._status
        passed = s[RunStatus.PASSED]
        scored = self._counted - s[RunStatus.SKIPPED]
        label = label_for(passed, scored)
        verdict = self._verdict_figures(passed, label)
        exact_rate = Fraction(100 * passed, scored) if scored else Fraction(0)
        d = self._durations.figures()
        pass_at, pass_hat = pass_k_figures(scored, passed, self.pass_k)
        return CaseStats(
            **self._case, runs=self._counted, passed=passed,
            failed=s[RunStatus.FAILED] + s[RunStatus.ERROR] + s[RunStatus.TIMEOUT],
            errors=s[RunStatus.ERROR], timeouts=s[RunStatus.TIMEOUT], skipped=s[RunStatus.SKIPPED],
            pass_rate=percent(passed, scored),
            pass_rate_ci=wilson_percent(passed, scored),
            consistency=self._consistency(scored), stable=scored > 0 and passed == scored,
            stability_class=stability_class(exact_rate), label=label,
            runs_planned=self.plan.runs, required_passes=self.plan.required,
            **verdict, **self._costs.figures(passed),  # type: ignore[arg-type]
            runs_not_run=max(0, self.plan.runs - self._counted - int(verdict.get("runs_saved", 0))),  # type: ignore[call-overload]
            queued_ms=round(self._queued_ms, 3),
            avg_duration_ms=d["avg"], min_duration_ms=d["min"], max_duration_ms=d["max"],
            std_deviation_ms=d["std"], retries=self._retries, unreached=self._unreached,
            distinct_outputs=len(self._outputs),
            failure_reasons=self._reasons.top(), pass_at_k=pass_at, pass_hat_k=pass_hat,
            run_details=self._details.sorted(), run_details_truncated=self._details.truncated,
            failure_classes=self._failures.stats(), checkpoints=self._checkpoints.stats(),
            retry_bias=self._retry_split.figures(), load_bias=self._load.figures(),
            criteria=self._criteria.stats(), **self._paths.figures(),  # type: ignore[arg-type]
            **self._meanings.figures(), served=self._served.sorted() if self._served else None,
            arm=self._arm, duration_histogram=self._histogram.figures() if self._histogram is not None else None,
        )
