"""``farm test``: its flags, read into ``TestSettings``; the sweep itself runs in ``farm.cli.test_run``.

The flags import only click and constants (``farm.defaults``), so ``farm test --help`` loads none of
the sweep's modules (pydantic, rich, the planner: about 0.4 s); the command's body imports them.
"""

from __future__ import annotations

from typing import Any

import click

from farm import collector
from farm.cli.fleet import fleet_flags
from farm.cli.history_flags import history_flags
from farm.cli.options import RATE, StrictCommand
from farm.cli.otel_flags import otel_flags
from farm.cli.yao_flags import yao_flags
from farm.defaults import DEFAULT_PARALLEL
from farm.settings import DEFAULT_QUEUE

EXAMPLES = """
\b
Examples:
  farm test -i examples/keyword/tests/inputs.jsonl --runs 5
  farm test -i tests/ -o report.html -o junit.xml --runs 20
  farm test -m "Extract keywords from: cats and dogs" -n py:examples/keyword/agent.py:respond
  farm test -i suite.jsonl -k smoke -k "billing-*" --min-pass-rate 90%
  farm test -i suite.jsonl --broker redis://localhost:6379/0 --runs 50
  farm test -i suite.jsonl --runs 20 --arm old=py:v1.py:respond --arm new=py:v2.py:respond

\b
Exit codes (the first that applies wins):
  2    bad input or configuration: nothing was run
  130  interrupted by Ctrl-C (143: by SIGTERM); the reports hold what ran
  3    runtime error: broker or workers lost, crash, sweep failed or abandoned;
       or the agent could not be reached (every run: connection failed or 401/403)
  5    stopped: the provider's quota is exhausted
  4    stopped by a budget
  1    some case failed, or the overall pass rate is below --min-overall-pass-rate
  0    every case passed

\b
Every completed run is also appended to a journal under $FARM_DATA_DIR/journals/
(default ~/.local/share/agent-farm; kept FARM_JOURNAL_DAYS, default 7): farm report
JOURNAL -o FILE renders it, even after a crash or a second Ctrl-C.
"""


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from farm.durations import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None



def _ramp(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    from farm.stats.ramp import parse_ramp

    try:
        return parse_ramp(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _odd(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if value < 1 or value % 2 == 0:
        raise click.BadParameter(f"{value}: need an odd number of verdicts (1, 3, 5…) so a majority always stands")
    return value


@click.command(cls=StrictCommand, epilog=EXAMPLES)
@click.option("-i", "--input", "input_", default=None, metavar="PATH",
              help="A .jsonl (Yao) or .hocon/.conf (neuro-san) suite, or a directory of suites. A value that "
                   "looks like a path (a / in it, a suite or .json extension, a leading . or ~) or is a single "
                   "word is always one: when it does not exist, exit 2 (--yao-compat: a single word is a "
                   "message). Text with spaces that names no file is sent as a message, as -m does.")
@click.option("-m", "--message", default=None, metavar="TEXT",
              help="Send TEXT to the agent once (direct message mode); the answer is printed to stdout unless -o.")
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Report file, repeatable (each written from the same sweep); the format follows the "
                   "extension: .jsonl .json .md .html .xml (JUnit). Checked writable before the first run. "
                   "-o -: stdout (JSONL as runs finish, or the -r report.* format). "
                   "Default: <input dir>/output-YYYYMMDDHHMMSS.jsonl.")
@click.option("-n", "--name", default=None, metavar="AGENT",
              help="Agent under test: an id under the agents root (keyword, workers.system.keyword), "
                   "py:module:function, py:file.py:function, http(s)://…, neuro-san://host:port/agent, "
                   "cmd:program. Default: the package.yao found walking up from the suite.")
@click.option("-c", "--connector", default=None, help="Override the connector of prompt agents (e.g. openai.gpt-4o).")
@click.option("-u", "--user", default=None, help="Test user id for every case (default: the case's, else test-user).")
@click.option("-t", "--team", default=None, help="Test team id for every case (default: the case's, else test-team).")
@click.option("-r", "--reporter", default=None, metavar="ID",
              help="report.json, report.markdown, report.html, report.summary, or an agent id whose answer "
                   "is written to -o.")
@click.option("--runs", type=int, default=None,
              help="Runs per case for stability analysis (default 1, or the case's success_ratio n).")
@click.option("--timeout", "timeout_s", callback=_duration, default=None, metavar="DURATION",
              help="Default whole-run timeout per case, e.g. 30s, 2m, 1m30s (default 5m).")
@click.option("--parallel", type=int, default=DEFAULT_PARALLEL, show_default=True,
              help="Runs in flight at once (in-process).")
@click.option("--ramp", callback=_ramp, default=None, metavar="LEVELS",
              help="Run the suite --runs times at each concurrency, e.g. 2,4,8,16 (in-process; the cost is "
                   "levels × runs): the report's summary.ramp gives pass rate, p50/p95 latency, 429s and timeouts "
                   "per level, the HTML a quality-under-load plot.")
@click.option("-v", "--verbose", is_flag=True,
              help="After the sweep, print each distinct failure once, with its count, an example and its "
                   "traceback.")
@click.option("--fail-fast", is_flag=True, help="Stop scheduling runs after the first failed case.")
@click.option("--isolate", is_flag=True,
              help="Run sync python agents in a pool of subprocesses: one that calls os._exit or segfaults "
                   "is a crashed run, not a dead farm.")
@click.option("--broker", envvar="FARM_BROKER_URL", default=None, metavar="URL",
              help="Run distributed on this Celery broker: redis://, rediss:// (TLS) or amqp:// (RabbitMQ, with "
                   "FARM_STORE_URL). Env: FARM_BROKER_URL.")
@click.option("--queue", envvar="FARM_QUEUE", default=DEFAULT_QUEUE, show_default=True,
              help="Celery queue to submit to. Env: FARM_QUEUE.")
@click.option("--detach", is_flag=True, help="Submit, print the sweep id and return (distributed only).")
@click.option("--own-queue", "own_queue", is_flag=True,
              help="Publish the sweep on a queue of its own, farm.sweep.<sweep id> (distributed only, instead of "
                   "--queue): `farm worker --sweep ID` consumes it and no other sweep's runs.")
@click.option("--no-bundle", "no_bundle", is_flag=True,
              help="Distributed: carry no bundle; the workers see the project at the paths the plan names "
                   "(a shared volume). By default the sweep packs what its workers need (README: Bundles).")
@click.option("--bundle-max", "bundle_max", type=click.FloatRange(min=0, min_open=True), default=50.0,
              show_default=True, metavar="MB",
              help="Distributed: the most a bundle may hold, in MB of files; over it farm test exits 2 naming "
                   "the largest.")
@click.option("--min-pass-rate", type=RATE, default=1.0, show_default=True, metavar="RATE",
              help="A case passes when its pass rate is at least RATE (0.95 or 95%); a case's success_ratio wins.")
@click.option("--min-overall-pass-rate", type=RATE, default=None, metavar="RATE",
              help="Also fail (exit 1) when the share of all runs that passed is below RATE (0.9 or 90%).")
@click.option("--judge", default=None, metavar="CONNECTOR", help="Connector for gist/not_gist/agent checks.")
@click.option("--confirm-failures", type=int, callback=_odd, default=1, metavar="K",
              help="A judged check (gist, not_gist, agent) that fails is judged K times in all (K odd), past the "
                   "judge cache; the majority stands and the verdicts are kept as judge_votes. Each repeat is a "
                   "paid judge call.")
@click.option("--server", envvar="FARM_NEURO_SAN_URL", default=None, metavar="URL",
              help="neuro-san server for http/https connections (default http://localhost:8080).")
@click.option("-k", "patterns", multiple=True, metavar="PATTERN",
              help="Run only cases whose id contains PATTERN, or matches it as a glob when it has * ? [; "
                   "repeatable (any match).")
@click.option("--no-progress", is_flag=True,
              help="No progress bar, and no line counting the cases of a suite that takes over a second to load "
                   "(both off anyway when stderr is not a terminal).")
@click.option("--quarantine", "quarantine", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Quarantine entries for every case (default: each project's farm-quarantine.toml): a "
                   "quarantined case runs and is reported but does not set the exit code until its date.")
@click.option("--estimate", is_flag=True,
              help="Print the sweep's expected calls, tokens, cost and wall time (from the history of the same "
                   "suite, else one probe call per agent and judge) and run nothing else; with --budget, "
                   "exit 4 when over it.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only with --estimate (an error without it): the workers the sweep will run on, each running "
                   "--parallel runs at once (default 1).")
@click.option("--detect", type=click.FloatRange(0, 100, min_open=True), default=None, metavar="POINTS",
              help="Only with --estimate: the runs per case (and their cost) that detect a drop of POINTS points "
                   "from each case's recorded pass rate with power 0.8 (farm compare at --alpha, --min-drop).")
@click.option("--neuro-san-compat", is_flag=True,
              help="Compare less/greater the way neuro-san's code does (actual > given passes 'less').")
@click.option("--no-semantic", "no_semantic", is_flag=True,
              help="Compute no semantic figures (answers clustered by meaning): reports say they were turned "
                   "off. Env: FARM_SEMANTIC=0.")
@click.option("--arm", "arms", multiple=True, metavar="NAME=AGENT",
              help="A matrix arm: every case also runs against AGENT (as -n takes it), reported as NAME; "
                   "repeatable. The arms' runs are interleaved and each arm is judged against the baseline arm.")
@click.option("--matrix", "matrix_file", default=None, type=click.Path(dir_okay=False), metavar="FILE.toml",
              help="Matrix arms from a TOML file: [[arm]] tables with name, agent, and optionally connector and "
                   "options (model, temperature, ...).")
@click.option("--baseline-arm", default=None, metavar="NAME",
              help="The arm the others are compared with (default: the first).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of a matrix's interleaving order.")
@fleet_flags
@history_flags
@yao_flags
@otel_flags
def test(input_: str | None, outputs: tuple[str, ...], patterns: tuple[str, ...], no_progress: bool,
         **flags: Any) -> None:
    """Run test suites against an agent and report pass rates and stability."""
    with collector.paused():  # the sweep's modules: objects that all stay (farm.collector)
        from farm.api import TestSettings
        from farm.cli.otel_flags import OtelFlags
        from farm.cli.run import run_command
        from farm.cli.test_run import run_test
        from farm.history.session import HistoryOptions
        from farm.matrix.arms import MatrixFlags
        from farm.plan.fleet import FleetFlags

    history = HistoryOptions.from_flags(flags)  # takes the history flags out of ``flags``
    if flags.get("arms") or flags.get("matrix_file"):
        _check_matrix_history(history.baseline, history.tags)
    fleet = FleetFlags.from_flags(flags)  # and the fleet-control flags
    quarantine = flags.pop("quarantine", None)
    workers, estimate, detect = flags.pop("workers", None), flags.pop("estimate", False), flags.pop("detect", None)
    if workers is not None and not estimate:
        raise click.UsageError(f"--workers {workers}: only with --estimate (farm worker runs the workers)")
    if detect is not None and not estimate:
        raise click.UsageError(f"--detect {detect:g}: only with --estimate")
    estimate_workers = (workers or 1) if estimate else None
    otel = OtelFlags.from_flags(flags)  # and --otel, --otel-runs
    semantic = False if flags.pop("no_semantic", False) else None  # None: FARM_SEMANTIC decides
    own_queue = _check_own_queue(flags)
    bundle_max = flags.pop("bundle_max")
    bundle_max_bytes = None if flags.pop("no_bundle") else int(bundle_max * 1_000_000)
    matrix = MatrixFlags(flags.pop("arms"), flags.pop("matrix_file"), flags.pop("baseline_arm"), flags.pop("seed"),
                         alpha=history.alpha, min_drop=history.min_drop)
    settings = TestSettings(input=input_, outputs=outputs, patterns=patterns, fleet=fleet, semantic=semantic,
                            matrix=matrix, **flags)
    run_command(lambda: run_test(settings, progress=not no_progress, history=history, quarantine=quarantine,
                                 estimate_workers=estimate_workers, detect=detect, otel=otel,
                                 own_queue=own_queue, bundle_max=bundle_max_bytes),
                verbose=settings.verbose)



def _check_matrix_history(baseline: str | None, tags: tuple[str, ...]) -> None:
    """A matrix's arms are recorded as sweeps ``MATRIX:ARM``: one baseline comparison, or the nightly
    loop (one sweep compared with the last nightly), has no single sweep to take."""
    if baseline:
        raise click.UsageError(f"--baseline {baseline}: a matrix's arms are recorded as sweeps MATRIX:ARM; "
                               "compare one with farm compare REF MATRIX:ARM")
    if "trigger=nightly" in (tag.replace(" ", "") for tag in tags):
        raise click.UsageError("--tag trigger=nightly: the nightly loop compares one sweep with the last "
                               "nightly; a matrix's arms are several (run them as nightlies of their own)")


def _check_own_queue(flags: dict[str, Any]) -> bool:
    """``--own-queue`` (taken out of ``flags``): it names the queue itself, and only a broker has queues."""
    if not flags.pop("own_queue", False):
        return False
    if not flags.get("broker"):
        raise click.UsageError("--own-queue: only for a distributed sweep (--broker URL or FARM_BROKER_URL)")
    source = click.get_current_context().get_parameter_source("queue")
    if source is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--own-queue names the sweep's queue itself: drop --queue")
    return True


__all__ = ["test"]
