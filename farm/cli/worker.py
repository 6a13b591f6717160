"""``farm worker``: a Celery worker of the farm's app with the farm's defaults.

The app lives in ``workers.app``; it is imported by name (as ``celery -A workers.app`` does), so
the ``farm`` package never imports ``workers`` statically. Settings are checked first: a bad
FARM_* value exits 2 with one line, like every other command.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from farm.celery_config import DEFAULT_BROKER_URL, celery_settings
from farm.cli.run import run_command
from farm.cli.supervise import SUPERVISOR_ENV, supervise
from farm.orphans import die_with_parent

DEFAULT_CONCURRENCY = 64
"""Runs in flight per worker process: runs wait on the network, not on the CPU."""

PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": ["-h", "--help"]}

broker_option = click.option(
    "--broker", envvar="FARM_BROKER_URL", default=DEFAULT_BROKER_URL, show_default=True, metavar="URL",
    help="Redis broker of the farm. Env: FARM_BROKER_URL.",
)


def start_worker(broker: str, argv: list[str], *, events: bool) -> int:
    """Resolve the settings (SettingsError → exit 2), then hand over to Celery's worker."""
    supervisor = os.environ.get(SUPERVISOR_ENV)
    if supervisor:
        die_with_parent(int(supervisor))
    os.environ["FARM_BROKER_URL"] = broker  # before workers.app reads its settings
    if events:
        os.environ["FARM_TASK_EVENTS"] = "1"
    settings = celery_settings(broker)
    app = importlib.import_module("workers.app").app
    app.conf.update(settings)
    app.worker_main(argv)
    return 0


@click.command(context_settings=PASS_THROUGH)
@broker_option
@click.option("-Q", "--queues", default="farm", show_default=True, help="Queues to consume, comma-separated.")
@click.option("-c", "--concurrency", type=int, default=DEFAULT_CONCURRENCY, show_default=True,
              help="Runs in flight in this worker (threads).")
@click.option("-P", "--pool", default="threads", show_default=True, help="Celery pool: threads, prefork, solo, …")
@click.option("-l", "--loglevel", default="INFO", show_default=True)
@click.option("-n", "--hostname", default=None, help="Worker name (default: farm-PID@HOST, unique).")
@click.option("--events", is_flag=True, envvar="FARM_TASK_EVENTS",
              help="Send Celery task events from the start (Flower). Off by default: they cost CPU per run, "
                   "and a running Flower turns them on anyway. Env: FARM_TASK_EVENTS=1.")
@click.option("--supervise/--no-supervise", default=True, show_default=True,
              help="Run the Celery worker in a child process and start a new one when it dies "
                   "(an agent's os._exit or segfault, an unrecoverable broker error).")
@click.pass_context
def worker(ctx: click.Context, broker: str, queues: str, concurrency: int, pool: str, loglevel: str,
           hostname: str | None, events: bool, supervise: bool) -> None:
    """Start a Celery worker with the farm's defaults; other arguments go to Celery as they are."""
    name = hostname or f"farm-{os.getpid()}@%h"
    if supervise:
        child = [sys.executable, "-m", "farm", "worker", "--no-supervise", f"--broker={broker}",
                 f"--queues={queues}", f"--concurrency={concurrency}", f"--pool={pool}", f"--loglevel={loglevel}",
                 f"--hostname={name}", *(["--events"] if events else []), *ctx.args]
        run_command(lambda: run_supervised(broker, child))
    argv = ["worker", f"--queues={queues}", f"--concurrency={concurrency}", f"--pool={pool}",
            f"--loglevel={loglevel}", f"--hostname={name}", *(["--task-events"] if events else []), *ctx.args]
    run_command(lambda: start_worker(broker, argv, events=events))


def run_supervised(broker: str, child: list[str]) -> int:
    celery_settings(broker)  # a bad FARM_* setting exits 2 here, once, not in a restart loop
    return supervise(child)



__all__ = ["DEFAULT_CONCURRENCY", "broker_option", "start_worker", "worker"]
