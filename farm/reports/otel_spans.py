"""A finished sweep as OpenTelemetry spans, sent over OTLP/HTTP (needs the ``otel`` extra).

One ``farm.sweep`` span over the sweep's wall time; under it one ``farm.case`` span per case with
the farm's figures as attributes (SPEC 19) and a GenAI semantic-convention evaluation event
(``gen_ai.evaluation.result``: the pass rate as the score, pass/fail as the label, the most
common failure as the explanation); optionally one ``farm.run`` span per run under its case.
The spans are made after the sweep, with the sweep's own times, by a tracer provider of our own
(never the process's global one): the exporter reads the standard ``OTEL_EXPORTER_OTLP_*``
variables, the resource ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``.

The spans are collected in memory and sent by one exporter call per batch, quietly: a collector
that is down costs at most ``EXPORT_TIMEOUT_S`` (unless ``OTEL_EXPORTER_OTLP_*TIMEOUT`` says
otherwise) and one line of the farm's (``ExportFailed``), not the SDK's retry log lines.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Protocol

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, Status, StatusCode

from farm.models import CaseStats, SweepReport
from farm.settings import safe_url

__all__ = ["ExportFailed", "export_spans"]

EXPORT_TIMEOUT_S = 3.0
"""How long a collector that does not answer may hold the command up (the SDK's default is 10 s, retried)."""
BATCH = 512
"""Spans per export call (the SDK's batch processor's default)."""
TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


class RunSpan(Protocol):
    """What a per-run span needs of a run (``farm.reports.otel.RunSpan`` holds it)."""

    @property
    def case_id(self) -> str: ...
    @property
    def run(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def started_at(self) -> str | None: ...
    @property
    def duration_ms(self) -> float: ...
    @property
    def failure_class(self) -> str | None: ...


class ExportFailed(Exception):
    """The collector did not take the spans (down, refused, or too slow)."""

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The GenAI semantic conventions' evaluation event (a case's verdict is an evaluation result)."""


def _ns(stamp: str | None) -> int | None:
    if not stamp:
        return None
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1_000_000_000)


def _sweep_times(report: SweepReport) -> tuple[int | None, int | None]:
    """Start and end in ns: the end as completed, the start a duration before it (the report's
    timestamps are to the second; its duration is to the millisecond)."""
    end = _ns(report.envelope.completed_at)
    if end is None:
        return _ns(report.envelope.started_at), None
    return end - int(report.summary.duration_ms * 1_000_000), end


def _case_attributes(stats: CaseStats) -> dict[str, str | int | float | bool | list[str]]:
    low, high = stats.pass_rate_ci
    return {
        "farm.case.id": stats.id, "farm.case.suite": stats.suite, "farm.case.pass_rate": stats.pass_rate,
        "farm.case.runs": stats.runs, "farm.case.passed_runs": stats.passed, "farm.case.ci_low": low,
        "farm.case.ci_high": high, "farm.case.stability_class": stats.stability_class.value,
        "farm.case.label": stats.label, "farm.case.passed": stats.case_passed,
        "farm.case.failure_classes": list(stats.failure_classes),
    }


def _evaluation(span: Span, stats: CaseStats) -> None:
    explanation = stats.failure_reasons[0].reason if stats.failure_reasons else ""
    span.add_event(EVALUATION_EVENT, {
        "gen_ai.evaluation.name": "farm.pass_rate", "gen_ai.evaluation.score.value": stats.pass_rate / 100,
        "gen_ai.evaluation.score.label": "pass" if stats.case_passed else "fail",
        "gen_ai.evaluation.explanation": explanation,
    })


def _sweep_attributes(report: SweepReport) -> dict[str, str | int | float]:
    s, meta = report.summary, report.envelope
    return {
        "farm.sweep.id": str(meta.sweep_id or ""), "farm.agent.id": str(meta.agent_id or ""),
        "farm.sweep.status": str(report.outcome.status or ""), "farm.sweep.cases": s.total_cases,
        "farm.sweep.runs": s.total_runs, "farm.sweep.pass_rate": s.overall_pass_rate,
        "farm.sweep.passed_cases": s.passed_cases, "farm.sweep.failed_cases": s.failed_cases,
        "farm.sweep.flaky_cases": s.flaky_cases, "farm.sweep.broken_cases": s.broken_cases,
    }


def _runs(tracer: trace.Tracer, runs: Sequence[RunSpan], default_start: int | None) -> None:
    for run in runs:
        start = _ns(run.started_at) or default_start
        end = start + int(run.duration_ms * 1_000_000) if start is not None else None
        span = tracer.start_span("farm.run", start_time=start, attributes={
            "farm.case.id": run.case_id, "farm.run.index": run.run, "farm.run.status": run.status,
            "farm.run.duration_ms": run.duration_ms, **({"farm.run.failure_class": run.failure_class}
                                                         if run.failure_class else {})})
        if run.status != "passed":
            span.set_status(Status(StatusCode.ERROR, run.failure_class or run.status))
        span.end(end_time=end)


def export_spans(report: SweepReport, runs: Sequence[RunSpan] = ()) -> None:
    """Send the sweep's spans and wait until they are delivered (or the exporter gives up)."""
    service = os.environ.get("OTEL_SERVICE_NAME") or "agent-farm"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    collected = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer("farm")
    start, end = _sweep_times(report)
    by_case: dict[str, list[RunSpan]] = {}
    for run in runs:
        by_case.setdefault(run.case_id, []).append(run)
    try:
        sweep = tracer.start_span("farm.sweep", start_time=start, attributes=_sweep_attributes(report))
        with trace.use_span(sweep, end_on_exit=False):
            for stats in report.results:
                case = tracer.start_span("farm.case", start_time=start, attributes=_case_attributes(stats))
                _evaluation(case, stats)
                if not stats.case_passed:
                    case.set_status(Status(StatusCode.ERROR, f"pass rate {stats.pass_rate:.1f}%"))
                with trace.use_span(case, end_on_exit=False):
                    _runs(tracer, by_case.get(stats.id, []), start)
                case.end(end_time=end)
        sweep.end(end_time=end)
    finally:
        provider.shutdown()
    _send(list(collected.get_finished_spans()))


def _send(spans: list[ReadableSpan]) -> None:
    own_timeout = not any(os.environ.get(name) for name in TIMEOUT_VARIABLES)
    exporter = OTLPSpanExporter(timeout=EXPORT_TIMEOUT_S if own_timeout else None)
    try:
        with _sdk_quiet():
            for first in range(0, len(spans), BATCH):
                if exporter.export(spans[first:first + BATCH]) is not SpanExportResult.SUCCESS:
                    raise ExportFailed(f"the collector at {_endpoint()} did not take the spans "
                                       "(down, refusing them, or slower than the export timeout)")
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]


def _endpoint() -> str:
    given = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return safe_url(given or "http://localhost:4318")


class _Silenced(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith("opentelemetry")  # the SDK's records only: the rest pass


@contextlib.contextmanager
def _sdk_quiet() -> Iterator[None]:
    """The SDK logs each retry and failure itself: the farm says it once (``ExportFailed``). A
    filter of this export's own, not the logger's level: two threads exporting at once (a worker's)
    cannot leave the SDK silenced for good."""
    sdk, silenced = logging.getLogger("opentelemetry"), _Silenced()
    # where the SDK's records end up: its loggers' handlers, the root's (a worker's), or the last resort
    handlers = [h for h in {*sdk.handlers, *logging.getLogger().handlers, logging.lastResort} if h is not None]
    for handler in handlers:
        handler.addFilter(silenced)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(silenced)
