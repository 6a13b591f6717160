"""``farm assess`` as a library: a report (or a sweep run now) → an ``Assessment``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from farm.api import TestSettings, agent_options, prepare_sweep
from farm.assess.judge import create_mode_judge
from farm.assess.memory import ModeMemory
from farm.assess.models import Assessment, CaseAssessment
from farm.assess.modes import ModeJudge, assess_case
from farm.errors import InputError
from farm.models import SweepReport
from farm.reports import parse_json_report
from farm.textfiles import read_utf8

__all__ = ["AssessSettings", "assess_failures", "load_or_run"]


@dataclass(frozen=True)
class AssessSettings:
    """What ``farm assess`` was asked."""

    source: str
    """A farm JSON report, or what ``farm test -i`` takes (a suite, a directory)."""
    judge: str | None = None
    """Names the modes (a connector id or ``agents:<id>``); also the judge of the sweep's gist checks."""
    name: str | None = None
    runs: int | None = None
    server: str | None = None
    connector: str | None = None
    cwd: str = "."


def _test_settings(settings: AssessSettings) -> TestSettings:
    return TestSettings(input=settings.source, name=settings.name, runs=settings.runs, judge=settings.judge,
                        server=settings.server, connector=settings.connector, cwd=settings.cwd)


def load_or_run(settings: AssessSettings) -> SweepReport:
    """The report to assess: read from a JSON report, or from a sweep of the suite run now.

    A sweep runs each case ``success_ratio``'s n times (``--runs`` wins) and keeps every run.
    """
    path = Path(settings.cwd) / settings.source
    if not path.exists():  # farm assess has no -m: farm test's hint would mislead
        raise InputError(f"{settings.source}: no such file or directory (give a JSON report, a suite file or a "
                         "directory of suites)")
    if path.suffix.lower() == ".json" and path.is_file():
        return parse_json_report(read_utf8(path, settings.source), str(path))
    from farm.sweep.local import LocalExecutor
    from farm.sweep.observers import Observers

    prepared = prepare_sweep(_test_settings(settings))
    plan = prepared.plan.model_copy(update={"max_run_details": max(c.plan.runs for c in prepared.plan.cases)})
    return LocalExecutor(adapters=prepared.adapters).run(plan, Observers())


async def _assess(report: SweepReport, judge: ModeJudge | None, memory: ModeMemory) -> list[CaseAssessment]:
    cases = []
    for stats in report.results:
        if stats.label == "skipped":
            continue
        case = await assess_case(stats, judge, memory.known(stats.id))
        memory.remember(stats.id, [m.mode for m in case.modes])
        cases.append(case)
    return cases


def assess_failures(settings: AssessSettings, memory: ModeMemory) -> Assessment:
    """Resolve the judge (a bad one exits 2 before anything runs), get the report, name every case's modes.

    Judge calls run one after another, so modes found for one failure are offered for the next.
    """
    judge = None
    if settings.judge:
        judge = create_mode_judge(settings.judge, agent_options(_test_settings(settings)))
    report = load_or_run(settings)

    async def run() -> list[CaseAssessment]:
        try:
            return await _assess(report, judge, memory)
        finally:
            if judge is not None:
                await judge.aclose()

    return Assessment(cases=asyncio.run(run()), judge=settings.judge, source=settings.source)
