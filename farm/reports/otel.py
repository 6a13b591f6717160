"""Whether and how a sweep is exported to OpenTelemetry (SPEC 19); the spans are ``farm.reports.otel_spans``.

Export is on when ``--otel`` is given or a standard OTLP endpoint variable is set
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), and off whenever
``OTEL_SDK_DISABLED=true``. The OpenTelemetry packages are an extra (``otel``): without them a
variable is ignored with one warning line, and ``--otel`` is bad input (exit 2, nothing run).
An in-process sweep is exported by the ``farm test`` process when it finishes; a distributed one
by the worker that closes it (``--otel`` travels in the plan: ``SweepEnvelope.otel``; the endpoint is the
worker's own). Per-run spans (``--otel-runs``) are off by default: a million runs, a million spans.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from farm.errors import SettingsError
from farm.extras import install_hint
from farm.models import CaseStats, RunResult, SweepReport, SweepStart, run_status

__all__ = ["ENDPOINT_VARIABLES", "OtelObserver", "RunSpan", "check_extra", "export_report", "requested"]

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
MISSING = ("OpenTelemetry is not installed, so no spans are exported: install the farm with its otel extra "
           f"({install_hint('otel')})")


@dataclass(frozen=True)
class RunSpan:
    """What a per-run span needs of a run (kept instead of the whole ``RunResult``)."""

    case_id: str
    run: int
    status: str
    started_at: str | None
    duration_ms: float
    failure_class: str | None


def _variable_set() -> str | None:
    return next((name for name in ENDPOINT_VARIABLES if os.environ.get(name)), None)


def requested(flag: bool = False) -> bool:
    """Is an export asked for, by ``--otel`` or by the environment?"""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return flag or _variable_set() is not None


def _installed() -> bool:
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


def check_extra(flag: bool, warn: Callable[[str], None]) -> bool:
    """Before the sweep: True when the sweep will be exported. ``--otel`` without the extra is a
    settings error (exit 2); a variable without it is one warning, and no export."""
    if not requested(flag):
        return False
    if _installed():
        return True
    if flag:
        raise SettingsError(f"--otel: {MISSING}")
    warn(f"{_variable_set()} is set but {MISSING}")
    return False


def export_report(report: SweepReport, runs: list[RunSpan] | None = None) -> str | None:
    """Send the sweep's spans; None when they were taken, else the one line that says why not
    (the caller says it). Never raised: a tracing backend that is down must not fail the sweep."""
    try:
        from farm.reports.otel_spans import ExportFailed, export_spans
    except ImportError:
        return MISSING
    try:
        export_spans(report, runs or [])
    except ExportFailed as exc:
        problem = f"OpenTelemetry export failed: {exc}; the reports are complete"
    except Exception as exc:
        problem = f"OpenTelemetry export failed: {type(exc).__name__}: {exc}; the reports are complete"
    else:
        return None
    return problem


class OtelObserver:
    """Exports an in-process sweep when it finishes; keeps each run's span facts when asked to."""

    def __init__(self, *, per_run: bool = False) -> None:
        self._runs: list[RunSpan] | None = [] if per_run else None
        self.problem: str | None = None
        """Why the export failed (None: it did, or has not run): said once, after the summary."""

    def on_start(self, start: SweepStart) -> None:
        return None

    def on_result(self, result: RunResult) -> None:
        if self._runs is not None:
            self._runs.append(RunSpan(result.case_id, result.run, run_status(result.status).value, result.started_at,
                                      result.duration_ms, result.failure_class))

    def on_case(self, stats: CaseStats) -> None:
        return None

    def on_finish(self, report: SweepReport) -> None:
        self.problem = export_report(report, self._runs)
