"""``farm bisect --good REF --bad REF [-o FILE] -- <farm test args>`` (SPEC 18).

GOOD and BAD are run first with every case and compared with ``farm compare``'s statistics; the
regressed cases are bisected over the commits between them, each probe run adaptively in its own
worktree (``farm.bisect``). Exit 0 a first bad commit named; 1 no case regressed between GOOD
and BAD; 2 bad input before anything ran; 3 a probe could not run; 130 interrupted, 143 terminated
(the worktrees are removed and what was learned is printed and written).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import click

from farm.bisect.search import DEFAULT_BATCH, DEFAULT_MAX_RUNS
from farm.bisect.sequential import DEFAULT_ALPHA, DEFAULT_BETA, Verdict
from farm.cli.run import run_command
from farm.errors import ExitCode, SettingsError

DEFAULT_ENDPOINT_RUNS = 30
"""Runs of every case at GOOD and at BAD."""


_NO_REPORT = ("--estimate", "--detach", "--collect-only", "--dry-run")
"""``farm test`` flags a probe cannot use: no report comes back."""


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
        ctx = test.make_context("farm test", list(args), resilient_parsing=False)
    except click.ClickException as exc:
        raise SettingsError(f"farm test arguments: {exc.format_message()}") from None
    if ctx.params.get("runs") is not None:  # each probe sets its own
        raise SettingsError("farm test arguments: --runs is farm bisect's (--runs for GOOD and BAD, --max-runs and "
                            "--batch for the probes)")
    for flag in _NO_REPORT:  # each runs nothing a probe could read, or nothing here
        if ctx.params.get(flag.lstrip("-").replace("-", "_")):
            raise SettingsError(f"farm test arguments: {flag} writes no report a probe can read")


def _regressed(good_report: Any, bad_report: Any) -> list[str]:
    from farm.stats.compare import compare, snapshot_of

    comparison = compare(snapshot_of(good_report), snapshot_of(bad_report))
    return [c.id for c in comparison.cases if c.verdict == "regressed"]


class _Run:
    """One bisection: its probes so far, so an interrupt can tell what was learned."""

    def __init__(self, options: BisectOptions, root: Path, commits: list[str], good: str, bad: str) -> None:
        self.options, self.root, self.commits = options, root, commits
        self.good, self.bad = good, bad
        self.bisect_id = uuid.uuid4().hex[:8]
        self.cases: list[str] = []
        self.endpoints: list[Any] = []
        self.search: Any = None
        self.served: list[Any] = []
        """What served GOOD's and BAD's runs (SPEC 25): a provider's change is no commit's doing."""

    def run(self, runner: Any) -> bool:
        """GOOD and BAD, then the bisection; False when no case regressed."""
        from farm.bisect.probe import pooled
        from farm.bisect.search import Bisection, ProbeResult
        from farm.bisect.sequential import Sprt, smoothed

        ends: tuple[tuple[str, Verdict], ...] = ((self.good, "good"), (self.bad, "bad"))
        reports = []
        for sha, verdict in ends:  # each end said as soon as it is known
            report = (_end_report(runner, self.good, self.bad, self.options.runs) if verdict == "good"
                      else runner.report(sha, self.options.runs))
            reports.append(report)
            self.served.append(report.summary.served)
            passed, runs = pooled(report, [c.id for c in report.results])
            self.endpoints.append(ProbeResult(sha, runs, passed, verdict))
            click.echo(f"  {verdict.upper()} {sha[:12]}: {passed}/{runs} runs passed", err=True)
        self.cases = _regressed(*reports)
        if not self.cases:
            return False
        for end, report in zip(self.endpoints, reports, strict=True):  # the rates of the regressed cases only
            end.passed, end.runs = pooled(report, self.cases)
        (gp, gn), (bp, bn) = ((e.passed, e.runs) for e in self.endpoints)
        click.echo(f"  regressed: {', '.join(self.cases)} ({gp}/{gn} at GOOD, {bp}/{bn} at BAD)", err=True)
        self.search = Bisection(self.commits, Sprt(smoothed(gp, gn), smoothed(bp, bn), self.options.alpha,
                                                   self.options.beta))
        self.search.run(lambda sha, n: runner.passes(sha, n, self.cases), batch=self.options.batch,
                        max_runs=self.options.max_runs, told=self._told)
        return True

    def _told(self, probe: Any) -> None:
        from farm.bisect.git import subject

        click.echo(f"  probe {probe.commit[:12]} {subject(self.root, probe.commit)[:50]}: "
                   f"{probe.passed}/{probe.runs} passed: {probe.verdict}", err=True)

    def document(self) -> dict[str, Any]:
        from farm.bisect.git import subject
        from farm.bisect.output import served_at_ends

        doc: dict[str, Any] = {"bisect_id": self.bisect_id, "good": self.good, "bad": self.bad, "cases": self.cases,
                               "first_bad": None, "suspects": [], "max_runs": self.options.max_runs,
                               "batch": self.options.batch}
        if self.search is None:
            doc.update(probes=[p.to_json() for p in self.endpoints], runs=sum(p.runs for p in self.endpoints))
        else:
            doc.update(self.search.describe(self.endpoints))
        doc["subject"] = subject(self.root, doc["first_bad"]) if doc["first_bad"] else None
        return {**doc, **served_at_ends(*self.served)} if len(self.served) == 2 else doc


def _checked_outputs(options: BisectOptions) -> list[tuple[str, str]]:
    """The ``-o`` files with their formats, once every option and test argument is checked (exit 2)."""
    from farm.bisect.output import output_format

    for flag, value in (("--runs", options.runs), ("--max-runs", options.max_runs), ("--batch", options.batch)):
        if value < 1:
            raise SettingsError(f"{flag} {value}: must be at least 1")
    outputs = [(path, output_format(path)) for path in options.outputs]
    _check_test_args(options.test_args)
    return outputs


def _tell(outputs: list[tuple[str, str]], doc: dict[str, Any], *, regressed: bool = True) -> None:
    """Write the ``-o`` files and print the result."""
    from farm.bisect.output import served_line, summary_lines, write_outputs

    write_outputs(outputs, doc)
    said = served_line(doc)
    for line in summary_lines(doc) if regressed else ["no case regressed between GOOD and BAD", *filter(None, [said])]:
        click.echo(line)


class _Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised where the bisection is: the probe's ``farm test`` is killed, the
    worktrees removed, and what was learned told."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.code = ExitCode.TERMINATED if signum == signal.SIGTERM else ExitCode.INTERRUPTED


@contextlib.contextmanager
def _stoppable() -> Iterator[None]:
    """SIGINT and SIGTERM end the bisection as Ctrl-C does (exit 130, 143), also when SIGINT came
    ignored (a background job of a script: ``kill -INT`` must still stop it, as it stops
    ``farm test``), and a SIGTERM never leaves worktrees behind."""
    if threading.current_thread() is not threading.main_thread():  # no handlers there (a library call)
        yield
        return

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise _Stopped(signum)

    saved = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _end_report(runner: Any, good: str, bad: str, runs: int) -> Any:
    """GOOD's report. A GOOD probe that was bad input (exit 2) is bad input of the bisection (exit
    2, SPEC 26) when BAD's is too: the test arguments are wrong at both ends (a mistyped agent);
    at one end only it stays a probe failure (exit 3: an agent may not exist at an old commit)."""
    from farm.bisect.probe import ProbeError

    try:
        return runner.report(good, runs)
    except ProbeError as at_good:
        if at_good.probe_exit != 2:
            raise
        try:
            runner.report(bad, runs)
        except ProbeError as at_bad:
            if at_bad.probe_exit == 2:
                raise SettingsError(f"the test arguments are bad input at GOOD and at BAD: {at_bad.message}"
                                    ) from None
        raise


def run_bisect(options: BisectOptions) -> int:
    from farm.bisect import git
    from farm.bisect.probe import ProbeRunner

    outputs = _checked_outputs(options)
    cwd = Path.cwd()
    root = git.repo_root(cwd)
    good, bad = git.resolve(root, options.good, "--good"), git.resolve(root, options.bad, "--bad")
    bisection = _Run(options, root, git.commits_between(root, good, bad), good, bad)
    click.echo(f"bisect {bisection.bisect_id}: {len(bisection.commits)} commits after GOOD {good[:12]} up to BAD "
               f"{bad[:12]} (history tag bisect={bisection.bisect_id})", err=True)
    try:
        with _stoppable(), git.Worktrees(root) as trees:
            if trees.stale:
                click.echo(f"removed {len(trees.stale)} worktree(s) an earlier farm bisect left when it was killed: "
                           f"{', '.join(str(p) for p in trees.stale)}", err=True)
            regressed = bisection.run(ProbeRunner(trees, cwd.resolve().relative_to(root.resolve()),
                                                  options.test_args, bisection.bisect_id))
    except KeyboardInterrupt as exc:  # the worktrees are gone (the with block): say what was learned
        _tell(outputs, {**bisection.document(), "interrupted": True, "first_bad": None})
        return int(exc.code if isinstance(exc, _Stopped) else ExitCode.INTERRUPTED)
    _tell(outputs, bisection.document(), regressed=regressed)
    return int(ExitCode.OK if regressed else ExitCode.CASES_FAILED)


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
