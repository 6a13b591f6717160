"""``farm worker``: a Celery worker of the farm's app with the farm's defaults.

The app lives in ``workers.app``; this command hands Celery's own command line ``-A workers.app``,
so Celery imports it, as ``celery -A workers.app worker`` does, and the ``farm`` package never
imports ``workers``. Settings are checked first: a bad
FARM_* value exits 2 with one line, like every other command.

By default it starts one worker process per core under a supervisor (``farm.distributed.supervise``) that
starts a new one when one dies (an agent's ``os._exit`` or segfault takes one process, never the
fleet): each child is ``farm worker --no-supervise`` with the same options, named ``NAME-1``,
``NAME-2``, … (one child keeps ``NAME``).
"""

from __future__ import annotations

import os
import sys

import click

from farm.agents.reaper import contained
from farm.cli.run import run_command
from farm.distributed.broker.celery_config import DEFAULT_BROKER_URL, celery_settings
from farm.distributed.supervise import Supervisor, default_processes
from farm.settings import DEFAULT_QUEUE

WORKER_APP = "workers.app"
"""The farm's Celery app, by name: Celery imports it (``-A``), never ``farm``."""

DEFAULT_CONCURRENCY = 64
"""Runs in flight per worker process: runs wait on the network, not on the CPU."""

PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": ["-h", "--help"]}

broker_option = click.option(
    "--broker", envvar="FARM_BROKER_URL", default=DEFAULT_BROKER_URL, show_default=True, metavar="URL",
    help="Broker of the farm: redis://, rediss:// (TLS), unix:// or amqp:// (RabbitMQ; the sweep data then "
         "stays in FARM_STORE_URL, a Redis). Env: FARM_BROKER_URL.",
)


def start_worker(broker: str, argv: list[str], *, events: bool, queue: str = DEFAULT_QUEUE) -> int:
    """Resolve the settings (SettingsError → exit 2), then hand over to Celery's worker."""
    os.environ["FARM_BROKER_URL"] = broker  # before workers.app reads its settings
    os.environ["FARM_QUEUE"] = queue
    if events:
        os.environ["FARM_TASK_EVENTS"] = "1"
    celery_settings(broker)  # a bad FARM_* value exits 2 here; workers.app reads the same environment
    with contained():  # this process runs the agents: what they leave behind ends with it (farm.agents.reaper)
        return celery_main(["-A", WORKER_APP, *argv])


def celery_main(argv: list[str]) -> int:
    """Celery's command line on ``argv``; its exit code. ``app.worker_main`` drops that code, so a
    worker Celery stopped on an error ("Unrecoverable error", exit code 1) exited 0, which a
    supervisor reads as "told to stop": it was not started again (CI stop 20)."""
    from celery.bin.celery import celery

    try:
        code = celery.main(args=argv, standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    return code if isinstance(code, int) else 0


def supervise_workers(broker: str, processes: int, child_args: list[str], hostname: str) -> int:
    """``processes`` children ``farm worker --no-supervise CHILD_ARGS -n HOSTNAME-i`` (one child keeps
    the name as it is), supervised."""
    celery_settings(broker)  # a bad FARM_* value exits 2 here, before any child starts
    env = {**os.environ, "FARM_BROKER_URL": broker}  # in the environment, not on a command line `ps` shows

    def argv(index: int) -> list[str]:
        name, at, host = hostname.partition("@")
        child = f"{name}-{index}{at}{host}" if processes > 1 else hostname
        return [sys.executable, "-m", "farm", "worker", "--processes", "1", "--no-supervise", *child_args,
                f"--hostname={child}"]

    return Supervisor(argv, processes, env).run()


@click.command(context_settings=PASS_THROUGH)
@broker_option
@click.option("-Q", "--queues", envvar="FARM_QUEUE", default=DEFAULT_QUEUE, show_default=True,
              help="Queues to consume, comma-separated (the first is the worker's own). Env: FARM_QUEUE.")
@click.option("-c", "--concurrency", type=int, default=DEFAULT_CONCURRENCY, show_default=True,
              help="Runs in flight in this worker (threads).")
@click.option("-P", "--pool", default="threads", show_default=True, help="Celery pool: threads, prefork, solo, …")
@click.option("-l", "--loglevel", default="INFO", show_default=True)
@click.option("-n", "--hostname", default=None, help="Worker name (default: farm-PID@HOST, unique).")
@click.option("--processes", type=click.IntRange(min=1), default=None, metavar="N",
              help="Worker processes, each with --concurrency runs in flight, under one supervisor that "
                   "forwards signals and restarts a dead one. Default: one per core.")
@click.option("--events", is_flag=True, envvar="FARM_TASK_EVENTS",
              help="Send Celery task events from the start (Flower). Off by default: they cost CPU per run, "
                   "and a running Flower turns them on anyway. Env: FARM_TASK_EVENTS=1.")
@click.option("--log-runs", is_flag=True, envvar="FARM_LOG_RUNS",
              help="Log every run as it is received and as it ends (Celery's per-task INFO lines). Off by "
                   "default: they cost CPU per run; failures and warnings are logged either way. "
                   "Env: FARM_LOG_RUNS=1.")
@click.option("--supervise/--no-supervise", default=True, show_default=True,
              help="Run the worker processes as children of a supervisor that starts a new one when one dies "
                   "(an agent's os._exit or segfault). --no-supervise: one Celery worker in this process.")
@click.pass_context
def worker(ctx: click.Context, broker: str, queues: str, concurrency: int, pool: str, loglevel: str,
           hostname: str | None, processes: int | None, events: bool, log_runs: bool, supervise: bool) -> None:
    """Start Celery workers with the farm's defaults, one process per core, under a supervisor that
    starts a new one when one dies; other arguments go to Celery as they are."""
    if log_runs:
        os.environ["FARM_LOG_RUNS"] = "1"  # read by each worker process (workers.tasks), children included
    options = [f"--queues={queues}", f"--concurrency={concurrency}", f"--pool={pool}", f"--loglevel={loglevel}",
               *(["--events"] if events else [])]
    name = hostname or f"farm-{os.getpid()}@%h"
    if supervise:
        count = processes or default_processes()
        run_command(lambda: supervise_workers(broker, count, [*options, *ctx.args], name))
    if (processes or 1) > 1:
        raise click.UsageError("--no-supervise runs one worker process: --processes must be 1")
    argv = ["worker", *options[:4], f"--hostname={name}", *(["--task-events"] if events else []), *ctx.args]
    run_command(lambda: start_worker(broker, argv, events=events, queue=queues.split(",")[0].strip()))



__all__ = [
    "DEFAULT_CONCURRENCY", "WORKER_APP", "broker_option", "celery_main", "start_worker", "supervise_workers", "worker",
]
