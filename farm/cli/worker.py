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
import threading

import click

from farm.agents.reaper import contained
from farm.cli.run import run_command
from farm.distributed.broker.celery_config import DEFAULT_BROKER_URL, celery_settings
from farm.distributed.supervise import Supervisor, default_processes
from farm.errors import SettingsError
from farm.settings import DEFAULT_QUEUE, sweep_queue

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


def start_worker(broker: str, argv: list[str], *, events: bool, queue: str = DEFAULT_QUEUE,
                 idle: tuple[str, float] | None = None) -> int:
    """Resolve the settings (SettingsError → exit 2), then hand over to Celery's worker.
    ``idle``: (sweep id, seconds) of ``--sweep ID --exit-when-idle SECONDS``."""
    os.environ["FARM_BROKER_URL"] = broker  # before workers.app reads its settings
    os.environ["FARM_QUEUE"] = queue
    if events:
        os.environ["FARM_TASK_EVENTS"] = "1"
    celery_settings(broker)  # a bad FARM_* value exits 2 here; workers.app reads the same environment
    finished = watch_when_ready(*idle, queue) if idle is not None else None
    with contained():  # this process runs the agents: what they leave behind ends with it (farm.agents.reaper)
        code = celery_main(["-A", WORKER_APP, *argv])
    if finished is not None and finished.is_set():  # after the consumer stopped, or Celery declares it again
        forget_sweep_queue(broker, queue)
    return code


def watch_when_ready(sweep_id: str, idle_s: float, queue: str) -> threading.Event:
    """Once Celery's worker is up (its SIGTERM handler installed), watch the sweep: finished or idle
    ``idle_s`` seconds, this worker stops warmly and exits 0 (``farm.distributed.sweep_idle``).
    The event returned is set when it stopped because the sweep is finished."""
    from celery.signals import worker_ready

    from farm.distributed.store.sweep_store import SweepStore
    from farm.distributed.submit import create_celery_app
    from farm.distributed.sweep_idle import IdleWatch, stop_this_worker, sweep_activity, watch_in_thread
    from farm.settings import FarmSettings

    settings = FarmSettings.from_env()
    finished = threading.Event()

    def start(**_: object) -> None:
        store = SweepStore.from_url(settings.store_url, ttl=settings.result_ttl_s)
        app = create_celery_app(settings)
        watch_in_thread(IdleWatch(lambda: sweep_activity(store, app, sweep_id, queue), idle_s,
                                  stop_this_worker(sweep_id), finished.set))

    worker_ready.connect(start, weak=False)
    return finished


def forget_sweep_queue(broker: str, queue: str) -> None:
    """Delete a finished sweep's own queue unless messages wait in it (``delete_empty_queue``):
    kombu's Redis bindings of it never expire, and RabbitMQ keeps the queue."""
    from farm.distributed.broker.queues import delete_empty_queue
    from farm.distributed.submit import create_celery_app
    from farm.settings import FarmSettings

    try:
        delete_empty_queue(create_celery_app(FarmSettings.from_env(broker_url=broker)), queue)
    except Exception as exc:  # best effort: the sweep is done either way
        print(f"farm worker: could not delete the finished sweep's queue {queue}: {exc}", file=sys.stderr)


def celery_main(argv: list[str]) -> int:
    """Celery's command line on ``argv``; its exit code. ``app.worker_main`` drops that code, so a
    worker Celery stopped on an error ("Unrecoverable error", exit code 1) exited 0, which a
    supervisor reads as "told to stop": it was not started again (CI stop 20)."""
    from celery.bin.celery import celery

    try:
        code = celery.main(args=argv, standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.exceptions.UsageError as exc:  # farm worker hands the options it does not know to Celery
        raise SettingsError(f"farm worker: {exc.format_message()} (options farm worker does not know go to "
                            "Celery's worker: see farm worker --help and celery worker --help)") from None
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
@click.option("--sweep", "sweep_id", default=None, metavar="ID",
              help="Work for this sweep only: consume its own queue (farm test --own-queue), never another's.")
@click.option("--exit-when-idle", "idle_s", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="With --sweep: exit 0 once the sweep is finished, or nothing of it was queued or in flight "
                   "(on any worker) for SECONDS on end.")
@click.pass_context
def worker(ctx: click.Context, broker: str, queues: str, concurrency: int, pool: str, loglevel: str,
           hostname: str | None, processes: int | None, events: bool, log_runs: bool, supervise: bool,
           sweep_id: str | None, idle_s: float | None) -> None:
    """Start Celery workers with the farm's defaults, one process per core, under a supervisor that
    starts a new one when one dies; other arguments go to Celery as they are."""
    if log_runs:
        os.environ["FARM_LOG_RUNS"] = "1"  # read by each worker process (workers.tasks), children included
    queues, sweep_flags = _sweep_queue(ctx, queues, sweep_id, idle_s)
    options = [f"--queues={queues}", f"--concurrency={concurrency}", f"--pool={pool}", f"--loglevel={loglevel}",
               *(["--events"] if events else [])]
    name = hostname or f"farm-{os.getpid()}@%h"
    if supervise:
        count = processes or default_processes()
        run_command(lambda: supervise_workers(broker, count, [*options, *sweep_flags, *ctx.args], name))
    if (processes or 1) > 1:
        raise click.UsageError("--no-supervise runs one worker process: --processes must be 1")
    argv = ["worker", *options[:4], f"--hostname={name}", *(["--task-events"] if events else []), *ctx.args]
    idle = (sweep_id, idle_s) if sweep_id is not None and idle_s is not None else None
    run_command(lambda: start_worker(broker, argv, events=events, queue=queues.split(",")[0].strip(), idle=idle))


def _sweep_queue(ctx: click.Context, queues: str, sweep_id: str | None, idle_s: float | None
                 ) -> tuple[str, list[str]]:
    """The queues to consume and the flags a supervised child repeats: ``--sweep ID`` is its queue
    alone (a -Q naming another is a usage error; FARM_QUEUE in the environment gives way)."""
    if sweep_id is None:
        if idle_s is not None:
            raise click.UsageError("--exit-when-idle: only with --sweep ID (a shared queue is never idle for good)")
        return queues, []
    try:
        own = sweep_queue(sweep_id)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--sweep") from None
    if ctx.get_parameter_source("queues") is click.core.ParameterSource.COMMANDLINE and queues != own:
        raise click.UsageError(f"--sweep {sweep_id} consumes its queue {own} only: drop -Q {queues}")
    return own, [f"--sweep={sweep_id}", *([f"--exit-when-idle={idle_s:g}"] if idle_s is not None else [])]



__all__ = [
    "DEFAULT_CONCURRENCY", "WORKER_APP", "broker_option", "celery_main", "start_worker", "supervise_workers", "worker",
]
