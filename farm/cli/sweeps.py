"""Commands on distributed sweeps: ``farm results``, ``cancel``, ``status`` and ``flower``.

The work is in ``farm.distributed.submit`` and ``farm.distributed.store.sweep_store``; these print and return exit
codes.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import click

from farm.cli.options import StrictCommand
from farm.cli.run import run_command
from farm.cli.worker import PASS_THROUGH, broker_option
from farm.errors import BrokerError, ExitCode, SettingsError
from farm.settings import FarmSettings, safe_url
from farm.wording import plural

DEFAULT_FLOWER_MAX_TASKS = 10_000
"""Flower keeps this many tasks in memory (its default, 100,000, costs hundreds of MB)."""

FLOWER_TASK_COLUMNS = "name,uuid,state,args,result,received,started,runtime,worker"
"""Flower's task list shows each task's arguments (sweep, case, run) and result (a ``farm.run``'s
starts with its run's status: ``failed``, ``error``…); Flower's own default leaves both out."""


def _executor(broker: str) -> Any:
    from farm.distributed.submit import CeleryExecutor

    settings = FarmSettings.from_env(broker_url=broker)
    return CeleryExecutor(settings, warn=lambda m: click.echo(f"farm: warning: {m}", err=True))


def _jsonl_streams(targets: list[Any], streams: Any) -> list[TextIO]:
    """Where the JSONL stream goes: each ``-o`` .jsonl file (``-o -``: stdout), stdout without ``-o``."""
    if not targets:
        return [sys.stdout]
    return [sys.stdout if t.path is None else streams.enter_context(t.path.open("w", encoding="utf-8"))
            for t in targets if t.format == "jsonl"]


def fetch_results(sweep_id: str, broker: str, outputs: tuple[str, ...], *, progress: bool) -> int:
    """``farm results``: follow a sweep (live or finished) into every ``-o`` (or JSONL on stdout)."""
    from contextlib import ExitStack

    from rich.console import Console

    from farm.agents.secrets import masking
    from farm.cli.console import print_summary, say
    from farm.reports import write_rendered
    from farm.reports.jsonl import EventLines
    from farm.reports.outputs import OutputSpec, plan_outputs, write_report
    from farm.stats import exit_code_for
    from farm.sweep.observers import JsonlObserver, Observers, ProgressBar, SweepObserver

    targets = plan_outputs(OutputSpec(outputs), root=None, inputs=[], cwd=Path.cwd()) if outputs else []
    err = Console(stderr=True)
    executor = _executor(broker)
    with ExitStack() as streams:  # JSONL targets follow the sweep as runs land; stdout when no -o
        lines = EventLines()  # each run's line made once for all the streams
        observers: list[SweepObserver] = [JsonlObserver(masking(stream), lines)
                                          for stream in _jsonl_streams(targets, streams)]
        if progress and err.is_terminal:
            observers.append(ProgressBar(err))
        report = executor.attach(sweep_id, Observers(*observers))
    from farm.history.session import record_collected

    record_collected(report, lambda line: say(err, f"farm: {line}"))  # a detached sweep's --tag lands here
    for target in (t for t in targets if t.format != "jsonl"):
        if target.path is None:  # -o - with -r: rendered here, run details read from the store case by case
            write_rendered(report, target.format, masking(sys.stdout))
        else:
            write_report(report, target.path, target.format)
    if targets:
        print_summary(err, report)
    for target in targets:
        say(err, f"report: {target.path or 'stdout'}")
    return int(exit_code_for(report))


@click.command(cls=StrictCommand)
@click.argument("sweep_id")
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Report file, repeatable (.jsonl .json .md .html .xml); default: the JSONL stream on stdout.")
@broker_option
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def results(sweep_id: str, outputs: tuple[str, ...], broker: str, no_progress: bool) -> None:
    """Re-attach to a distributed sweep, live or finished, and write its results."""
    run_command(lambda: fetch_results(sweep_id, broker, outputs, progress=not no_progress))


def cancel_sweep(sweep_id: str, broker: str) -> int:
    stopped = _executor(broker).cancel(sweep_id)
    if stopped:
        click.echo(f"sweep {sweep_id}: cancelled; runs not started are dropped, the report keeps what ran")
    else:
        click.echo(f"sweep {sweep_id}: already finished or stopped")
    return int(ExitCode.OK)


@click.command(cls=StrictCommand)
@click.argument("sweep_id")
@broker_option
def cancel(sweep_id: str, broker: str) -> None:
    """Cancel a distributed sweep: runs not started yet are dropped."""
    run_command(lambda: cancel_sweep(sweep_id, broker))


def collect_status(broker: str, *, timeout: float = 1.0) -> dict[str, Any]:
    """Queues (waiting messages), workers (their queues, active tasks) and sweeps in flight."""
    from kombu.exceptions import OperationalError

    from farm.distributed.broker.queues import waiting_messages

    executor = _executor(broker)
    store = executor.store()
    sweeps = store.in_flight()
    try:  # the broker may be another server than the store (RabbitMQ): its own failure, exit 3
        inspect = executor.app.control.inspect(timeout=timeout)
        active_queues = inspect.active_queues() or {}
        active = inspect.active() or {}
        names = {executor.settings.queue} | {s.queue for s in sweeps if s.queue}
        names |= {q["name"] for qs in active_queues.values() for q in qs or [] if not q.get("exclusive")}
        waiting = waiting_messages(executor.app, names)
    except (OperationalError, OSError) as exc:
        raise BrokerError(f"cannot reach the broker at {safe_url(broker)}: {exc}") from None
    return {
        "broker": safe_url(broker),
        "store": safe_url(executor.store_url),
        "queues": waiting,
        "workers": [{"name": n, "queues": sorted(q["name"] for q in qs or []), "active": len(active.get(n) or [])}
                    for n, qs in sorted(active_queues.items())],
        "sweeps": [s.__dict__ | _lost(store, s.sweep_id, executor.settings.visibility_timeout_s) for s in sweeps],
    }


def _lost(store: Any, sweep_id: str, visibility_timeout_s: float) -> dict[str, Any]:
    from farm.distributed.lost_runs import lost_runs

    lost = lost_runs(store, sweep_id, visibility_timeout_s)
    return {"lost_runs": lost.count, "lost_runs_back_epoch": lost.back_epoch} if lost else {}


def _print_status(status: dict[str, Any]) -> None:
    click.echo(f"broker: {status['broker']}")
    if status["store"] != status["broker"]:
        click.echo(f"store: {status['store']}")
    click.echo("queues:")
    for name, waiting in status["queues"].items():
        click.echo(f"  {name}: {waiting} waiting")
    click.echo(f"workers: {len(status['workers'])}")
    for w in status["workers"]:
        click.echo(f"  {w['name']}  queues: {', '.join(w['queues'])}  active: {w['active']}")
    click.echo(f"sweeps in flight: {len(status['sweeps'])}")
    for s in status["sweeps"]:
        since = datetime.fromtimestamp(s["submitted_epoch"], UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        stopped = f"  ({s['stopped']})" if s["stopped"] else ""
        click.echo(f"  {s['sweep_id']}  {s['agent_id']}  runs {s['runs_done']}/{s['total_runs']}  "
                   f"cases {s['cases_done']}/{s['total_cases']}  queue {s['queue']}  since {since}{stopped}"
                   f"{_publishing(s)}")
        if s.get("lost_runs"):
            back = datetime.fromtimestamp(s["lost_runs_back_epoch"], UTC).strftime("%H:%M:%SZ")
            click.echo(f"    {plural(s['lost_runs'], 'run')} lost with a worker that died (killed, out of memory, "
                       f"machine gone): published again by {back}, once the sweep has been idle a whole lease")


def _publishing(sweep: dict[str, Any]) -> str:
    """Where publishing stands, when it is not done: the workers finish a vanished publisher's work."""
    published, total = sweep.get("published"), sweep["total_runs"]
    if published is None:
        return "  (plan not stored whole: closed as abandoned once its publisher's lease expires)"
    if published >= total:
        return ""
    who = "publishing" if sweep.get("publisher") else "publisher gone: a worker publishes the rest"
    return f"  published {published}/{total} ({who})"


@click.command(cls=StrictCommand)
@broker_option
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option("--timeout", type=float, default=1.0, show_default=True, help="Seconds to wait for workers.")
def status(broker: str, as_json: bool, timeout: float) -> None:
    """Show queues, workers and sweeps in flight."""

    def show() -> int:
        data = collect_status(broker, timeout=timeout)
        if as_json:
            click.echo(json.dumps(data, indent=2))
        else:
            _print_status(data)
        return int(ExitCode.OK)

    run_command(show)


def flower_command(
    broker: str, port: int, address: str, max_tasks: int, extra: list[str]
) -> tuple[list[str], dict[str, str]]:
    """The Flower command line and environment; refuses to run without a password."""
    user, password = os.environ.get("FARM_FLOWER_USER"), os.environ.get("FARM_FLOWER_PASSWORD")
    if not user or not password:
        raise SettingsError("farm flower needs FARM_FLOWER_USER and FARM_FLOWER_PASSWORD: it will not serve the "
                            "farm's tasks unauthenticated")
    if ":" in user or "," in user or "," in password:
        raise SettingsError("FARM_FLOWER_USER must not contain ':' or ','; FARM_FLOWER_PASSWORD must not contain ','")
    env = {**os.environ, "FARM_BROKER_URL": broker, "FLOWER_BASIC_AUTH": f"{user}:{password}"}
    columns = [] if any(a.startswith("--tasks_columns") for a in extra) else [f"--tasks_columns={FLOWER_TASK_COLUMNS}"]
    argv = [sys.executable, "-m", "celery", "-A", "workers.app", "flower", f"--port={port}",
            f"--address={address}", f"--max_tasks={max_tasks}", *columns, *extra]
    return argv, env


@click.command(context_settings=PASS_THROUGH)
@broker_option
@click.option("--port", type=int, default=5555, show_default=True)
@click.option("--address", default="127.0.0.1", show_default=True, help="Interface to listen on (0.0.0.0: all).")
@click.option("--max-tasks", type=int, default=DEFAULT_FLOWER_MAX_TASKS, show_default=True,
              help="Tasks Flower keeps in memory.")
@click.pass_context
def flower(ctx: click.Context, broker: str, port: int, address: str, max_tasks: int) -> None:
    """Start Flower on the farm's broker, behind basic auth (FARM_FLOWER_USER/FARM_FLOWER_PASSWORD).

    The task list shows each task's arguments (sweep, case, run) and result. Workers send task
    events only when asked: Flower asks running workers every few seconds, so tasks show up
    shortly after it starts; 'farm worker --events' sends them from the first task. Other
    arguments go to Flower as they are.
    """

    def start() -> int:
        argv, env = flower_command(broker, port, address, max_tasks, list(ctx.args))
        os.execve(sys.executable, argv, env)  # the password travels in the environment, not argv

    run_command(start)


__all__ = [
    "FLOWER_TASK_COLUMNS",
    "cancel",
    "collect_status",
    "fetch_results",
    "flower",
    "flower_command",
    "results",
    "status",
]
