"""``farm judge-check REPORT``: ask a report's judges again about the outputs they judged (SPEC 23).

Each distinct judged output (``farm.judgecheck.items``) is judged ``repeats`` times by a judge
built fresh, with no judge cache and no recording: every verdict is a new call. Per criterion the
verdicts give ``judge_flip_rate`` / ``judge_noisy``, per case the share of failures the judge
alone explains (``farm.stats.judge_trust``).

The suite each case names (its ``source``) is read when it is at hand, for the judge an ``agent``
assertion names (``use``); a case whose content no longer matches its ``content_hash`` is judged
as the report holds it, by the default judge, and said so. ``--judge`` judges every check.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from farm.agents.judge import create_judge_resolver
from farm.agents.options import AgentOptions
from farm.checks.base import JUDGE_REPEAT, Judge, JudgeVerdict
from farm.checks.judged import criterion_text
from farm.errors import FarmRuntimeError, InputError
from farm.judgecheck.items import JudgedOutput, collect, scorecard_id
from farm.judgecheck.labels import LabelledCriterion, judge_against_labels
from farm.models import Case, CaseStats, SweepReport
from farm.reports import parse_json_report
from farm.stats.fingerprint import case_fingerprint
from farm.stats.judge_trust import FlipRate, JudgeAlone, flip_rate, judge_alone
from farm.textfiles import read_utf8

DEFAULT_REPEATS = 5
DEFAULT_PARALLEL = 8


@dataclass(frozen=True)
class JudgeCheckSettings:
    source: str
    cwd: str
    repeats: int = DEFAULT_REPEATS
    sample: int | None = None
    """At most this many outputs per criterion (a seeded sample) when there are more."""
    judge: str | None = None
    """``--judge``: asks about every check; else each check's own judge, else the report's."""
    seed: int = 0
    parallel: int = DEFAULT_PARALLEL
    labels: str | None = None
    """``--labels FILE.jsonl``: human verdicts to hold the sweep's judge against."""
    estimate: bool = False
    """``--estimate``: say the calls and the cost, ask nothing (``JudgeCheck.estimate``)."""


@dataclass(frozen=True)
class CriterionTrust:
    case_id: str
    turn: int
    check: str
    criterion: str
    judge: str
    flips: FlipRate
    criterion_id: str | None = None
    """The scorecard's id of the criterion (``turn.check``; ``farm.judgecheck.items.scorecard_id``)."""


@dataclass
class JudgeCheck:
    """What ``farm judge-check`` found; the renderers take it whole."""

    source: str
    sweep_id: str | None
    repeats: int
    sample: int | None
    calls: int = 0
    errors: int = 0
    truncated: int = 0
    notes: list[str] = field(default_factory=list)
    criteria: list[CriterionTrust] = field(default_factory=list)
    cases: dict[str, JudgeAlone] = field(default_factory=dict)
    labels: list[LabelledCriterion] | None = None
    """With ``--labels``: per labelled criterion, the judge against the humans."""
    estimate: str | None = None
    """With ``--estimate``: the calls and cost it would take, in a sentence (nothing was asked)."""


def _path(settings: JudgeCheckSettings, name: str) -> Path:
    return Path(name) if Path(name).is_absolute() else Path(settings.cwd) / name


def load_report(settings: JudgeCheckSettings) -> SweepReport:
    """A JSON report (its kept run details), else a run journal or the id of a sweep with a journal
    in ``$FARM_DATA_DIR/journals`` (every run: the history keeps no outputs)."""
    from farm.settings import data_dir
    from farm.sweep.journal import journal_dir, journal_path

    path = _path(settings, settings.source)
    if path.is_file() and path.suffix.lower() == ".json":
        return parse_json_report(read_utf8(path, settings.source), settings.source)
    journal = path if path.is_file() else journal_path(data_dir(), settings.source)
    if not journal.is_file():
        raise InputError(f"{settings.source}: no such report or journal (give a JSON report written by farm test "
                         f"-o FILE.json, or a sweep whose journal is in {journal_dir(data_dir())}: the history "
                         "keeps no outputs)")
    from farm.sweep.replay import report_from_journal

    return report_from_journal(journal, every_run=True)


class SuiteCases:
    """Cases as their suites hold them now, checked against the report's ``content_hash``."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self._files: dict[str, dict[str, Case] | None] = {}

    def __call__(self, stats: CaseStats) -> Case | None:
        if not stats.source:
            return None
        if stats.source not in self._files:
            self._files[stats.source] = self._load(stats.source)
        case = (self._files[stats.source] or {}).get(stats.id)
        if case is not None and stats.content_hash and case_fingerprint(case) != stats.content_hash:
            self.notes.append(f"case {stats.id}: changed in {stats.source} since the report; judged as the "
                              "report holds it, by the default judge")
            return None
        return case

    def _load(self, source: str) -> dict[str, Case] | None:
        from farm.suites import load_input

        try:
            return {case.id: case for case in load_input(source).cases}
        except Exception as exc:  # the report alone still holds what was judged
            self.notes.append(f"{source}: cannot read the suite ({type(exc).__name__}: {exc}); checks judged "
                              "by the default judge")
            return None


Groups = dict[tuple[str, int, str, str], list[JudgedOutput]]
"""Outputs by criterion (case, turn, check, criterion)."""


def sampled(outputs: list[JudgedOutput], sample: int | None, seed: int) -> Groups:
    """Outputs by criterion, at most ``sample`` of each (a seeded choice, in report order)."""
    by_criterion: Groups = defaultdict(list)
    for output in outputs:
        by_criterion[output.criterion_key].append(output)
    rng = random.Random(seed)
    for key, group in by_criterion.items():
        if sample is not None and len(group) > sample:
            chosen = set(rng.sample(range(len(group)), sample))
            by_criterion[key] = [o for i, o in enumerate(group) if i in chosen]
    return by_criterion


def judge_check(settings: JudgeCheckSettings) -> JudgeCheck:
    """Load the report, re-judge its judged outputs, and sum up (runs the judges' event loop)."""
    report = load_report(settings)
    result = JudgeCheck(settings.source, report.envelope.sweep_id or None, settings.repeats,
                        settings.sample)
    collected = collect(report.results, SuiteCases(result.notes))
    result.truncated = collected.truncated
    if not collected.outputs:
        raise InputError(f"{settings.source}: no judged check (gist, not_gist, agent) with a verdict to judge again")
    if settings.labels is not None:  # read and matched before any judge is asked: a bad label is exit 2
        result.labels = judge_against_labels(_path(settings, settings.labels), settings.labels, report.results)
    groups = sampled(collected.outputs, settings.sample, settings.seed)
    if settings.estimate:
        result.estimate = _estimate(report, collected.outputs, groups, settings.repeats)
        return result
    default = settings.judge or _report_judge(report)
    options = AgentOptions.from_env(Path(settings.cwd), judge=default)
    resolver = create_judge_resolver(options)
    # every judge built before the first call: an unknown connector is exit 2 with nothing asked
    try:
        judges = {use: resolver(use) for use in {None if settings.judge else o.use for g in groups.values()
                                                 for o in g}}
    except BaseException:  # the judges built before the bad one are closed (no unclosed session warning)
        asyncio.run(resolver.aclose())
        raise
    verdicts = asyncio.run(_ask_all(groups, judges, settings, result, resolver.aclose))
    scorecards = {stats.id: stats.criteria for stats in report.results}
    for key, group in groups.items():
        name = settings.judge or group[0].use or default or "?"
        result.criteria.append(CriterionTrust(key[0], key[1], key[2], key[3], name,
                                              flip_rate(verdicts[id(o)] for o in group),
                                              scorecard_id(scorecards.get(key[0], []), *key[1:])))
    alone: dict[str, list[tuple[bool, list[bool]]]] = defaultdict(list)
    for group in groups.values():
        for output in group:
            alone[output.case_id] += [(passed, verdicts[id(output)]) for _, passed in output.runs]
    result.cases = {case_id: judge_alone(pairs) for case_id, pairs in alone.items()}
    if result.calls and result.errors == result.calls:
        raise FarmRuntimeError(f"the judge failed every one of {result.calls} calls ({result.notes[-1]})")
    return result


def _estimate(report: SweepReport, outputs: list[JudgedOutput], groups: Groups, repeats: int) -> str:
    """The calls ``groups`` take, and their cost at the sweep's cost per judge call: the sweep asked
    about each distinct output about once (the judge cache), so that is its judge cost over them."""
    asked = sum(len(o.criteria) for group in groups.values() for o in group)
    calls = asked * repeats
    spent = report.summary.judge_cost_usd
    per_call = spent / sum(len(o.criteria) for o in outputs) if spent is not None else None
    unknown = "cost unknown (the report has no judge cost: a priced model needs FARM_PRICES)"
    cost = f"about ${per_call * calls:.4g} (the sweep's judge cost per distinct output asked)" if per_call else unknown
    return f"{asked} outputs to judge, {repeats} verdicts each: {calls} judge calls, {cost}"


def _report_judge(report: SweepReport) -> str | None:
    history = report.envelope.history
    judge = history.settings.get("judge") if history is not None else None
    return judge if isinstance(judge, str) and judge else None


async def _ask_all(groups: Groups, judges: dict[str | None, Judge],
                   settings: JudgeCheckSettings, result: JudgeCheck,
                   close: Callable[[], object]) -> dict[int, list[bool]]:
    """Each output's verdicts (True: the check passes), ``settings.repeats`` asks each, errors dropped."""
    slots = asyncio.Semaphore(settings.parallel)
    verdicts: dict[int, list[bool]] = defaultdict(list)
    errors: list[str] = []

    async def ask(output: JudgedOutput, repeat: int) -> None:
        judge = judges[None if settings.judge else output.use]
        async with slots:
            token = JUDGE_REPEAT.set(repeat)  # no cache stands in the way; said for any judge that looks
            try:
                found = [await _verdict(judge, c, output) for c in output.criteria]
            finally:
                JUDGE_REPEAT.reset(token)
        result.calls += len(found)
        failed = [v for v in found if v.verdict == "error"]
        if failed:  # a failed call is no verdict: the repeat is dropped
            result.errors += len(failed)
            errors.append(f"case {output.case_id}: {failed[0].reason}")
            return
        verdicts[id(output)].append(all(v.verdict == output.want for v in found))

    try:
        await asyncio.gather(*(ask(o, r) for group in groups.values() for o in group
                               for r in range(1, settings.repeats + 1)))
    finally:
        closing = close()
        if asyncio.iscoroutine(closing):
            await closing
    if errors:
        result.notes.append(f"{len(errors)} judge call(s) failed and count as no verdict; the first: {errors[0]}")
    return verdicts


async def _verdict(judge: Judge, criterion: object, output: JudgedOutput) -> JudgeVerdict:
    try:
        return await judge.judge(criterion=criterion_text(criterion), actual=output.actual, input=output.input)
    except Exception as exc:  # a judge should not raise; one that does gave no verdict
        return JudgeVerdict("error", f"{type(exc).__name__}: {exc}")
