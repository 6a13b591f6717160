"""What a sweep tells as it runs: the observer protocol and the observers the CLI plugs in.

Both executors emit the same events in the same order per case: ``on_start`` once,
``on_result`` for every run as it completes, ``on_case`` once a case's runs are all in,
``on_finish`` last. Observers write the JSONL stream, move a progress bar, print. Terminal
output goes to stderr so that stdout stays clean for direct-message output and pipes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import click

from farm.models import CaseStats, RunResult, RunStatus, SweepReport, SweepStart

if TYPE_CHECKING:
    from rich.console import Console

    from farm.reports.jsonl import EventLines

log = logging.getLogger(__name__)


class SweepObserver(Protocol):
    """Receives a sweep's events; implementations write JSONL, move a bar, print."""

    def on_start(self, start: SweepStart) -> None: ...

    def on_result(self, result: RunResult) -> None: ...

    def on_case(self, stats: CaseStats) -> None: ...

    def on_finish(self, report: SweepReport) -> None: ...


def is_durable(observer: SweepObserver) -> bool:
    """Whether ``observer`` writes what must not be lost (``durable = True``: the run journal, the
    JSONL stream): its failure stops the sweep with what ran (SPEC 10)."""
    return bool(getattr(observer, "durable", False))


class Observers:
    """Fans events out to several observers, in order. A display observer (a bar, a printer) that
    raises is logged once and dropped, and the sweep goes on; a durable one's error propagates."""

    def __init__(self, *observers: SweepObserver) -> None:
        self._observers = list(observers)

    def _each(self, call: Callable[[SweepObserver], Any]) -> None:
        for o in list(self._observers):
            try:
                call(o)
            except Exception:
                if is_durable(o):
                    raise
                log.exception("observer %s failed; the sweep goes on without it", type(o).__name__)
                self._observers.remove(o)

    def on_start(self, start: SweepStart) -> None:
        self._each(lambda o: o.on_start(start))

    def on_result(self, result: RunResult) -> None:
        self._each(lambda o: o.on_result(result))

    def on_case(self, stats: CaseStats) -> None:
        self._each(lambda o: o.on_case(stats))

    def on_finish(self, report: SweepReport) -> None:
        self._each(lambda o: o.on_finish(report))


class JsonlObserver:
    """Writes the JSONL event stream to a text stream as the sweep goes (flushed per line);
    ``lines``: shared with the sweep's other JSONL writers (the journal's), so each line is made once."""

    durable = True

    def __init__(self, stream: TextIO, lines: EventLines | None = None) -> None:
        from farm.reports.jsonl import JsonlWriter

        self._writer = JsonlWriter(stream, lines)

    def on_start(self, start: SweepStart) -> None:
        self._writer.start(timestamp=start.timestamp, agent_id=start.agent_id, total_cases=start.total_cases,
                           total_runs=start.total_runs, sweep_id=start.sweep_id)

    def on_result(self, result: RunResult) -> None:
        self._writer.result(result)

    def on_case(self, stats: CaseStats) -> None:
        self._writer.stability(stats)

    def on_finish(self, report: SweepReport) -> None:
        self._writer.summary(report)


class StdoutPrinter:
    """Direct message mode: the agent's output on stdout, errors on stderr."""

    def __init__(self, err: Console) -> None:
        self._err = err

    def on_start(self, start: SweepStart) -> None:
        return None

    def on_result(self, result: RunResult) -> None:
        if result.status in (RunStatus.ERROR, RunStatus.TIMEOUT) and result.error:
            self._err.print(f"{result.status.value}: {result.error.message}", markup=False, highlight=False,
                            emoji=False, soft_wrap=True)  # as it is, one line (farm.cli.console.say)
            return
        out = result.output
        click.echo(out if isinstance(out, str) else json.dumps(out, indent=2, ensure_ascii=False))

    def on_case(self, stats: CaseStats) -> None:
        return None

    def on_finish(self, report: SweepReport) -> None:
        return None


class ProgressBar:
    """A progress bar with pass/fail counts, the running pass rate and an ETA."""

    def __init__(self, console: Console) -> None:
        # rich.progress only when a bar is drawn: --no-progress and pipes never import it.
        from rich import progress as bar

        self._progress = bar.Progress(
            bar.TextColumn("[bold]{task.description}"),
            bar.BarColumn(),
            bar.MofNCompleteColumn(),
            bar.TextColumn("[green]{task.fields[passed]} passed[/] [red]{task.fields[failed]} failed[/] "
                           "{task.fields[rate]}"),
            bar.TimeElapsedColumn(),
            bar.TextColumn("eta"),
            bar.TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._task = self._progress.add_task("runs", total=None, passed=0, failed=0, rate="")
        self._passed = 0
        self._failed = 0

    def on_start(self, start: SweepStart) -> None:
        self._progress.update(self._task, total=start.total_runs, description=start.agent_id)
        self._progress.start()

    def on_result(self, result: RunResult) -> None:
        if result.status is RunStatus.SKIPPED:
            return  # a skipped case's placeholder is no run: not in the total either (farm.sweep.lifecycle)
        if result.status is RunStatus.PASSED:
            self._passed += 1
        else:
            self._failed += 1
        scored = self._passed + self._failed
        rate = f"({100 * self._passed / scored:.1f}% pass rate)" if scored else ""
        self._progress.update(self._task, advance=1, passed=self._passed, failed=self._failed, rate=rate)

    def on_case(self, stats: CaseStats) -> None:
        return None

    def on_finish(self, report: SweepReport) -> None:
        self._progress.stop()


__all__ = [
    "JsonlObserver",
    "Observers",
    "ProgressBar",
    "StdoutPrinter",
    "SweepObserver",
    "is_durable",
]
