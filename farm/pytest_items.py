"""The pytest plugin's nodes: a suite file collects one item per case; the items share one sweep.

The sweeps are prepared when collection finishes (after ``-k`` and ``--lf`` have chosen the
items): an agent, a setting or a suite ``farm test`` would refuse with exit 2 is a pytest usage
error then, before any test runs, as an emptied suite file is a collection error. They run when
the first farm item runs, over exactly the cases chosen: one sweep per ``--farm-suite`` path, each limited to
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

from farm.errors import FarmError, InputError

if TYPE_CHECKING:  # the models load with the first suite, not with every pytest run
    from farm.api import PreparedSweep
    from farm.models import CaseStats

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
    suites: list[Path] = field(default_factory=list)
    """The session's ``--farm-suite`` paths (resolved)."""
    chosen: dict[Path, dict[Path, set[str]]] = field(default_factory=dict)
    """Suite argument → suite file → the case ids chosen to run."""
    prepared: dict[Path, PreparedSweep] = field(default_factory=dict)
    """Suite argument → its sweep, checked and planned (``prepare``)."""
    results: dict[tuple[Path, str], CaseStats] = field(default_factory=dict)
    errors: dict[Path, str] = field(default_factory=dict)
    """A suite argument whose sweep could not run → why (every item of it fails with this)."""
    ran: bool = False

    def select(self, items: list[pytest.Item]) -> None:
        for item in items:
            if isinstance(item, FarmCaseItem):
                self.chosen.setdefault(item.suite_arg, {}).setdefault(item.path, set()).add(item.case_id)

    def prepare(self) -> None:
        """Check and plan each chosen suite's sweep as ``farm test`` does before it runs anything:
        what it refuses with exit 2 (a wrong ``--farm-agent``, a bad setting) is a usage error, not
        failed tests."""
        from farm.api import TestSettings, prepare_sweep

        for suite_arg, files in self.chosen.items():
            ids = {i for chosen in files.values() for i in chosen}
            pattern = "^(?:" + "|".join(re.escape(i) for i in sorted(ids)) + ")$"
            settings = TestSettings(input=str(suite_arg), name=self.agent, runs=self.runs, broker=self.broker,
                                    min_pass_rate=self.min_pass_rate, run_pattern=pattern, cwd=self.cwd)
            try:
                self.prepared[suite_arg] = prepare_sweep(settings)
            except InputError as exc:
                raise pytest.UsageError(f"farm: {exc.message}") from None
            except FarmError as exc:  # a runtime error (a broker down): its items fail, as a sweep's would
                self.errors[suite_arg] = exc.message

    def run_once(self) -> None:
        if self.ran:
            return
        self.ran = True
        from farm.api import create_executor
        from farm.sweep.observers import Observers

        for suite_arg, prepared in self.prepared.items():
            try:
                executor = create_executor(prepared.specs.executor, adapters=prepared.adapters)
                report = executor.run(prepared.plan, Observers(), None)
            except FarmError as exc:
                self.errors[suite_arg] = exc.message
                continue
            for stats in report.results:
                self.results[(Path(stats.source).resolve(), stats.id)] = stats


class SuiteFile(pytest.File):
    """A farm suite: one item per case; a suite with problems is a collection error naming them."""

    def __init__(self, *, sweeps: FarmSweeps, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sweeps = sweeps

    def collect(self) -> Iterator[FarmCaseItem]:
        from farm.suites import open_input

        stream = open_input(str(self.path))
        cases = list(stream)
        stream.check()  # SuiteError: every problem, each as file:line: key: problem
        suite_arg = _suite_arg(self.sweeps.suites, self.path)
        if not cases and (suite_arg == self.path.resolve() or not any(open_input(str(suite_arg)))):
            # as farm test: a suite (a file, or a directory of files) holding no case is an error
            raise InputError(f"{self.path}: no test cases")
        for case in cases:
            yield FarmCaseItem.from_parent(self, name=case.id, case_id=case.id, suite_arg=suite_arg, line=case.line,
                                           sweeps=self.sweeps)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, FarmError):
            return excinfo.value.message
        return super().repr_failure(excinfo)


def _suite_arg(suites: list[Path], path: Path) -> Path:
    resolved = path.resolve()
    return next(s for s in suites if s == resolved or s in resolved.parents)


class FarmCaseItem(pytest.Item):
    """One case of a farm suite; passes when the farm's verdict for the case is a pass."""

    def __init__(self, *, case_id: str, suite_arg: Path, line: int | None, sweeps: FarmSweeps,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sweeps = sweeps
        self.case_id = case_id
        self.suite_arg = suite_arg
        self.line = line
        self.add_marker("farm")

    def runtest(self) -> None:
        sweeps = self.sweeps
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
