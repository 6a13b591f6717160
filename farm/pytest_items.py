"""The pytest plugin's nodes: a suite file collects one item per case; the items share one sweep.

The sweep runs when the first farm item runs (after collection, ``-k`` and ``--lf`` have chosen
the items), over exactly the cases chosen: one sweep per ``--farm-suite`` path, each limited to
its chosen ids, all run before any item reports (a sweep takes one input, and its case ids must be
unique, which two independent suites need not be). Every item then reads its case's verdict from
the reports; ``-x`` only stops the reporting of a sweep already made.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from farm.errors import FarmError
from farm.pytest_plugin import SUITES_KEY, SWEEPS_KEY

if TYPE_CHECKING:  # the models load with the first suite, not with every pytest run
    from farm.models import CaseStats, SweepReport

__all__ = ["FarmCaseFailed", "FarmCaseItem", "FarmSweeps", "SuiteFile", "case_summary"]


class FarmCaseFailed(Exception):
    """Raised by an item whose case did not pass; its message is the farm's case summary."""


def case_summary(stats: CaseStats) -> str:
    """What a failed item says: its pass rate and interval, class, and most common failure."""
    from farm.reports.failures import example_text

    low, high = stats.pass_rate_ci
    scored = stats.runs - stats.skipped
    lines = [f"{stats.id}: pass rate {stats.pass_rate:.1f}% ({stats.passed}/{scored} runs passed, "
             f"{stats.required_passes} needed), 95% CI {low:.1f}–{high:.1f}%, {stats.stability_class.value}"]
    if stats.failure_reasons:
        top = stats.failure_reasons[0]
        lines.append(f"most common failure ({top.count}× of {scored} runs): {top.reason}")
    for name, entry in stats.failure_classes.items():
        lines.append(f"  {name} ×{entry.count}, e.g. {example_text(entry.example, with_case=False)}")
    return "\n".join(lines)


@dataclass
class FarmSweeps:
    """The session's sweeps: settings from the command line, the chosen items, the reports."""

    agent: str | None
    runs: int | None
    min_pass_rate: float
    broker: str | None
    cwd: str
    chosen: dict[Path, dict[Path, set[str]]] = field(default_factory=dict)
    """Suite argument → suite file → the case ids chosen to run."""
    results: dict[tuple[Path, str], CaseStats] = field(default_factory=dict)
    errors: dict[Path, str] = field(default_factory=dict)
    """A suite argument whose sweep could not run → why (every item of it fails with this)."""
    ran: bool = False

    def select(self, items: list[pytest.Item]) -> None:
        for item in items:
            if isinstance(item, FarmCaseItem):
                self.chosen.setdefault(item.suite_arg, {}).setdefault(item.path, set()).add(item.case_id)

    def run_once(self) -> None:
        if self.ran:
            return
        self.ran = True
        for suite_arg, files in self.chosen.items():
            try:
                report = self._sweep(suite_arg, {i for ids in files.values() for i in ids})
            except FarmError as exc:
                self.errors[suite_arg] = exc.message
                continue
            for stats in report.results:
                self.results[(Path(stats.source).resolve(), stats.id)] = stats

    def _sweep(self, suite_arg: Path, ids: set[str]) -> SweepReport:
        from farm.api import TestSettings, run_sweep

        pattern = "^(?:" + "|".join(re.escape(i) for i in sorted(ids)) + ")$"
        settings = TestSettings(input=str(suite_arg), name=self.agent, runs=self.runs, broker=self.broker,
                                min_pass_rate=self.min_pass_rate, run_pattern=pattern, cwd=self.cwd)
        return run_sweep(settings)


class SuiteFile(pytest.File):
    """A farm suite: one item per case; a suite with problems is a collection error naming them."""

    def collect(self) -> Iterator[FarmCaseItem]:
        from farm.suites import open_input

        stream = open_input(str(self.path))
        cases = list(stream)
        stream.check()  # SuiteError: every problem, each as file:line: key: problem
        suite_arg = _suite_arg(self.config, self.path)
        for case in cases:
            yield FarmCaseItem.from_parent(self, name=case.id, case_id=case.id, suite_arg=suite_arg, line=case.line)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, FarmError):
            return excinfo.value.message
        return super().repr_failure(excinfo)


def _suite_arg(config: pytest.Config, path: Path) -> Path:
    resolved = path.resolve()
    return next(s for s in config.stash[SUITES_KEY] if s == resolved or s in resolved.parents)


class FarmCaseItem(pytest.Item):
    """One case of a farm suite; passes when the farm's verdict for the case is a pass."""

    def __init__(self, *, case_id: str, suite_arg: Path, line: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case_id = case_id
        self.suite_arg = suite_arg
        self.line = line
        self.add_marker("farm")

    def runtest(self) -> None:
        sweeps = self.config.stash[SWEEPS_KEY]
        sweeps.run_once()
        if self.suite_arg in sweeps.errors:
            raise FarmCaseFailed(f"farm: {sweeps.errors[self.suite_arg]}")
        stats = sweeps.results.get((self.path.resolve(), self.case_id))
        if stats is None:
            raise FarmCaseFailed(f"{self.case_id}: the sweep reported no result for this case")
        if stats.label == "skipped":
            pytest.skip("skip: true in the suite")
        if not stats.case_passed:
            raise FarmCaseFailed(case_summary(stats))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, FarmCaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.line - 1) if self.line else None, f"farm case {self.case_id}"
