"""``farm bisect --good REF --bad REF [-o FILE] -- <farm test args>`` (SPEC 18).

GOOD and BAD are run first with every case and compared with ``farm compare``'s statistics; the
regressed cases are bisected over the commits between them, each probe run adaptively in its own
worktree (``farm.bisect``). Exit 0 a first bad commit named; 1 no case regressed between GOOD
and BAD; 2 bad input before anything ran; 3 a probe could not run; 130 interrupted (the worktrees
are removed and what was learned is printed and written).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from farm.bisect.search import DEFAULT_BATCH, DEFAULT_MAX_RUNS
from farm.bisect.sequential import DEFAULT_ALPHA, DEFAULT_BETA, Verdict
from farm.cli.run import run_command
from farm.errors import ExitCode, SettingsError

DEFAULT_ENDPOINT_RUNS = 30
"""Runs of every case at GOOD and at BAD."""


@dataclass(frozen=True)
class BisectOptions:
    good: str
    bad: str
    outputs: tuple[str, ...]
    test_args: tuple[str, ...]
    runs: int
    max_runs: int
    batch: int
    alpha: float
    beta: float


def _check_test_args(args: tuple[str, ...]) -> None:
    """The ``farm test`` arguments parse (bad ones are exit 2 before anything runs)."""
    from farm.cli.test import test

    if not args:
        raise SettingsError("give the farm test arguments after --: farm bisect --good A --bad B -- -i suite.jsonl")
    try:
        test.make_context("farm test", list(args), resilient_parsing=False)
    except click.ClickException as exc:
        raise SettingsError(f"farm test arguments: {exc.format_message()}") from None


def _regressed(good_report: Any, bad_report: Any) -> list[str]:
    from farm.stats.compare import compare, snapshot_of

    comparison = compare(snapshot_of(good_report), snapshot_of(bad_report))
    return [c.id for c in comparison.cases if c.verdict == "regressed"]


def _pooled(report: Any, cases: list[str]) -> tuple[int, int]:
    chosen = [c for c in report.results if c.id in set(cases)]
    return sum(c.passed for c in chosen), sum(c.runs - c.skipped for c in chosen)


def run_bisect(options: BisectOptions) -> int:
    from farm.bisect import git
    from farm.bisect.output import output_format, summary_lines, write_outputs
    from farm.bisect.probe import ProbeRunner
    from farm.bisect.search import Bisection, ProbeResult
    from farm.bisect.sequential import Sprt, smoothed

    for flag, value in (("--runs", options.runs), ("--max-runs", options.max_runs), ("--batch", options.batch)):
        if value < 1:
            raise SettingsError(f"{flag} {value}: must be at least 1")
    outputs = [(path, output_format(path)) for path in options.outputs]
    _check_test_args(options.test_args)
    cwd = Path.cwd()
    root = git.repo_root(cwd)
    good, bad = git.resolve(root, options.good, "--good"), git.resolve(root, options.bad, "--bad")
    commits = git.commits_between(root, good, bad)
    bisect_id = uuid.uuid4().hex[:8]
    doc: dict[str, Any] = {"bisect_id": bisect_id, "good": good, "bad": bad, "cases": [], "first_bad": None,
                           "suspects": [], "probes": [], "runs": 0}
    click.echo(f"bisect {bisect_id}: {len(commits)} commits after GOOD {good[:12]} up to BAD {bad[:12]} "
               f"(history tag bisect={bisect_id})", err=True)
    search: Bisection | None = None
    endpoints: list[ProbeResult] = []
    with git.Worktrees(root) as trees:
        runner = ProbeRunner(trees, cwd.resolve().relative_to(root.resolve()), options.test_args, bisect_id)
        try:
            reports = []
            ends: tuple[tuple[str, Verdict], ...] = ((good, "good"), (bad, "bad"))
            for sha, verdict in ends:
                report = runner.report(sha, options.runs)
                reports.append(report)
                passed, runs = _pooled(report, [c.id for c in report.results])
                endpoints.append(ProbeResult(sha, runs, passed, verdict))
                click.echo(f"  {verdict.upper()} {sha[:12]}: {passed}/{runs} runs passed", err=True)
            cases = _regressed(*reports)
            doc["cases"] = cases
            if not cases:
                doc.update(probes=[p.to_json() for p in endpoints], runs=sum(p.runs for p in endpoints))
                write_outputs(outputs, doc)
                click.echo("no case regressed between GOOD and BAD")
                return int(ExitCode.CASES_FAILED)
            (gp, gn), (bp, bn) = _pooled(reports[0], cases), _pooled(reports[1], cases)
            for sha, (p, n) in ((good, (gp, gn)), (bad, (bp, bn))):
                hit = next(e for e in endpoints if e.commit == sha)
                hit.passed, hit.runs = p, n
            sprt = Sprt(smoothed(gp, gn), smoothed(bp, bn), options.alpha, options.beta)
            click.echo(f"  regressed: {', '.join(cases)} ({gp}/{gn} at GOOD, {bp}/{bn} at BAD)", err=True)
            search = Bisection(commits, sprt)
            search.run(lambda sha, n: runner.passes(sha, n, cases), batch=options.batch, max_runs=options.max_runs,
                       told=lambda p: click.echo(f"  probe {p.commit[:12]} {git.subject(root, p.commit)[:50]}: "
                                                 f"{p.passed}/{p.runs} passed: {p.verdict}", err=True))
        except KeyboardInterrupt:
            doc.update(_learned(search, endpoints), interrupted=True)
            write_outputs(outputs, doc)
            for line in summary_lines(doc):
                click.echo(line)
            return int(ExitCode.INTERRUPTED)
    doc.update(_learned(search, endpoints), max_runs=options.max_runs, batch=options.batch)
    doc["subject"] = git.subject(root, doc["first_bad"]) if doc.get("first_bad") else None
    write_outputs(outputs, doc)
    for line in summary_lines(doc):
        click.echo(line)
    return int(ExitCode.OK)


def _learned(search: Any, endpoints: list[Any]) -> dict[str, Any]:
    if search is None:
        return {"probes": [p.to_json() for p in endpoints], "runs": sum(p.runs for p in endpoints)}
    described: dict[str, Any] = search.describe(endpoints)
    return described


@click.command(name="bisect", context_settings={"ignore_unknown_options": True})
@click.option("--good", required=True, metavar="REF", help="A commit where the cases pass (a ref git understands).")
@click.option("--bad", required=True, metavar="REF", help="A later commit where some pass less often.")
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Write the result: .json (first_bad, probes, runs) or .md. Repeatable.")
@click.option("--runs", type=int, default=DEFAULT_ENDPOINT_RUNS, show_default=True,
              help="Runs of every case at GOOD and at BAD.")
@click.option("--max-runs", type=int, default=DEFAULT_MAX_RUNS, show_default=True,
              help="Cap on the runs of each regressed case at one probe (then: inconclusive).")
@click.option("--batch", type=int, default=DEFAULT_BATCH, show_default=True,
              help="Runs of each regressed case added at a time until the sequential test decides.")
@click.option("--alpha", type=click.FloatRange(0.0001, 0.5), default=DEFAULT_ALPHA, show_default=True,
              help="Chance of calling a good commit bad (the sequential test's bound).")
@click.option("--beta", type=click.FloatRange(0.0001, 0.5), default=DEFAULT_BETA, show_default=True,
              help="Chance of calling a bad commit good.")
@click.argument("test_args", nargs=-1, type=click.UNPROCESSED, metavar="-- FARM_TEST_ARGS")
def bisect(good: str, bad: str, outputs: tuple[str, ...], runs: int, max_runs: int, batch: int, alpha: float,
           beta: float, test_args: tuple[str, ...]) -> None:
    """Find the first commit between GOOD and BAD where cases pass less often, with statistics.

    Each probe checks the commit out in a temporary git worktree and runs `farm test FARM_TEST_ARGS`
    there (the worktree is the working directory and first on sys.path). Exit 0 first bad commit
    named; 1 no case regressed between GOOD and BAD; 2 bad input; 3 a probe could not run; 130
    interrupted.
    """
    options = BisectOptions(good, bad, outputs, test_args, runs, max_runs, batch, alpha, beta)
    run_command(lambda: run_bisect(options))


__all__ = ["bisect", "run_bisect"]
