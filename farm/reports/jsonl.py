"""The JSONL event stream (SPEC 8): ``start``, a ``result`` per run, a ``stability`` per case,
``summary`` last; one JSON object per line, flushed as it is written."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from farm.errors import InputError
from farm.models import CaseStats, CheckOutcome, RunResult, SweepReport, own_case_id, run_status
from farm.reports.json_report import yao_summary_aliases


def _finite(value: Any) -> Any:
    """NaN and ±Infinity are not JSON: null, as the JSON report (pydantic) writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False)
"""What ``json.dumps(…, ensure_ascii=False, default=str, allow_nan=False)`` builds on every call."""


def _dumps(event: dict[str, Any]) -> str:
    try:
        line = _ENCODER.encode(event)
    except ValueError:  # rare: an agent answered NaN or Infinity
        event = _finite(event)
        line = json.dumps(event, ensure_ascii=False, default=str)
    if line.isascii():  # the common case: nothing to encode to find out
        return line
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from an agent: escape rather than crash
        line = json.dumps(event, ensure_ascii=True, default=str)
    return line


def _check(c: CheckOutcome) -> dict[str, Any]:
    event = {"name": c.name, "message": c.message, "expected": c.expected, "actual": c.actual}
    if c.verdict is not None:
        event |= {"verdict": c.verdict, "reason": c.reason}
    if c.judge_votes is not None:
        event["judge_votes"] = c.judge_votes
    return event


def result_event(r: RunResult) -> dict[str, Any]:
    """The ``result`` line of one run: Yao's fields, plus the error's type and bounded traceback."""
    event = {
        "type": "result",
        "id": r.case_id,
        "run": r.run,
        "status": run_status(r.status).value,
        "duration_ms": r.duration_ms,
        "output": r.output,
        "failed_checks": [_check(c) for c in r.failed_checks],
        "judged_checks": [_check(c) for c in r.checks if c.passed and c.verdict is not None],
        "error": None if r.error is None else (r.error.message or r.error.type),
        "retries": r.retries,
        "failure_class": r.failure_class,
        "failed_turn": r.failed_turn,
        **_dynamic(r),
    }
    if r.error is not None:
        event |= {"error_type": r.error.type, "traceback": r.error.traceback}
    if r.arm is not None:  # a matrix's arm (SPEC 22): the case's own id beside it
        event |= {"id": own_case_id(r.case_id, r.arm), "arm": r.arm}
    if r.served is not None:  # SPEC 25, when reported
        event["served"] = r.served.model_dump(mode="json", exclude_none=True)
    if r.in_flight is not None:  # SPEC 25: the sweep's runs in flight as it began
        event["in_flight"] = r.in_flight
    if r.usage is not None or r.cost_usd is not None or r.judge_usage is not None:  # SPEC 13, when known
        event |= {"usage": r.usage, "turn_usage": r.turn_usage, "cost_usd": r.cost_usd,
                  "judge_usage": r.judge_usage, "judge_cost_usd": r.judge_cost_usd}
    return event


def result_line(r: RunResult) -> str:
    """``result_event(r)`` as one JSON text (no newline)."""
    return _dumps(result_event(r))


def _dynamic(r: RunResult) -> dict[str, Any]:
    """A dynamic run's conversation and checkpoints (Yao's ``turns`` and ``checkpoints``)."""
    if r.turns is None:
        return {}
    return {"turns": [t.model_dump(mode="json") for t in r.turns],
            "checkpoints": {k: v.model_dump(mode="json") for k, v in (r.checkpoints or {}).items()}}


def stability_event(s: CaseStats) -> dict[str, Any]:
    """The ``stability`` line of one case: its statistics without the kept runs."""
    return {"type": "stability", **s.model_dump(mode="json", exclude={"run_details"})}


def stability_line(s: CaseStats) -> str:
    """``stability_event(s)`` as one JSON text (no newline)."""
    return _dumps(stability_event(s))


class EventLines:
    """The last run's ``result`` line and the last case's ``stability`` line, as made: the journal
    and each ``-o`` stream write the same line for each run, one after the other, so a sweep's
    writers share one of these and each line is made once (a strong reference to the run: the
    identity test cannot match another run)."""

    def __init__(self) -> None:
        self._result: tuple[RunResult | None, str] = (None, "")
        self._stability: tuple[CaseStats | None, str] = (None, "")

    def result(self, r: RunResult) -> str:
        """``result_line(r)``, made once for the run the writers are at."""
        last, line = self._result
        if last is not r:
            line = result_line(r)
            self._result = (r, line)
        return line

    def stability(self, s: CaseStats) -> str:
        """``stability_line(s)``, made once for the case the writers are at."""
        last, line = self._stability
        if last is not s:
            line = stability_line(s)
            self._stability = (s, line)
        return line


def summary_event(report: SweepReport) -> dict[str, Any]:
    """The ``summary`` line: sweep figures plus Yao's ``total``/``passed``/``failed`` counts, and
    the report's metadata (a stopped sweep says so here: ``status``, ``stopped``, ``not_run``)."""
    return {"type": "summary", **report.summary.model_dump(mode="json"), **yao_summary_aliases(report),
            "metadata": report.written_metadata()}


_json_key = json.encoder.encode_basestring_ascii
"""``json.dumps`` of a str, without building an encoder (the journal's key of every run line)."""


class JsonlWriter:
    """Writes events to a text stream, one line each, flushed at once (readers tail the file).
    ``lines``: the ``EventLines`` it shares with the sweep's other writers (its own if none)."""

    def __init__(self, stream: TextIO, lines: EventLines | None = None) -> None:
        self.stream = stream
        self.lines = EventLines() if lines is None else lines

    def write(self, event: dict[str, Any] | str, *, raw: dict[str, str] | None = None) -> None:
        """One line (an event, or its JSON text); ``raw`` values are JSON texts already (pydantic's),
        spliced in as they are."""
        line = event if isinstance(event, str) else _dumps(event)
        if raw:
            line = line[:-1] + "".join(f", {_json_key(key)}: {text}" for key, text in raw.items()) + "}"
        self.stream.write(line + "\n")
        self.stream.flush()

    def write_array(self, event: dict[str, Any], key: str, items: Iterable[str]) -> None:
        """One line whose ``key`` is a JSON array of ``items`` (JSON texts), written item by item:
        a million-case plan line is never one string in memory."""
        self.stream.write(_dumps(event)[:-1] + f", {json.dumps(key)}: [")
        for n, text in enumerate(items):
            self.stream.write(text if n == 0 else "," + text)
        self.stream.write("]}\n")
        self.stream.flush()

    def start(self, *, timestamp: str, agent_id: str, total_cases: int, total_runs: int,
              sweep_id: str | None) -> None:
        self.write({"type": "start", "timestamp": timestamp, "agent_id": agent_id,
                    "total_cases": total_cases, "total_runs": total_runs, "sweep_id": sweep_id})

    def result(self, r: RunResult) -> None:
        self.write(self.lines.result(r))

    def stability(self, s: CaseStats) -> None:
        if s.label != "skipped":  # a skipped case has no statistics (SPEC 10): summary.skipped_ids lists it
            self.write(self.lines.stability(s))

    def summary(self, report: SweepReport) -> None:
        self.write(summary_event(report))


def render_jsonl(report: SweepReport, results: Iterable[RunResult] | None = None) -> str:
    """The whole stream after the fact; without ``results`` it holds no ``result`` lines."""
    buffer = io.StringIO()
    writer = JsonlWriter(buffer)
    meta = report.envelope
    writer.start(timestamp=str(meta.started_at or ""), agent_id=str(meta.agent_id or ""),
                 total_cases=report.summary.total_cases, total_runs=report.summary.total_runs,
                 sweep_id=meta.sweep_id)
    for r in results or ():
        writer.result(r)
    for s in report.results:
        writer.stability(s)
    writer.summary(report)
    return buffer.getvalue()


def read_jsonl_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """Events of a JSONL file; a last line still being written (no newline, not JSON) is left out."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError as exc:
                if not line.endswith("\n"):
                    return
                raise InputError(f"{path}:{number}: not a JSON line: {exc}") from exc
            if not isinstance(event, dict):
                raise InputError(f"{path}:{number}: expected a JSON object, got {type(event).__name__}")
            yield event
