"""The history hook of the ``farm.report`` task: a worker records detached and nightly sweeps.

SPEC 12: the submitter records its sweep, except a detached or nightly one (the submitter has
gone), which the worker running ``farm.report`` records when it has its own ``FARM_HISTORY_URL``.
The database URL is the worker's own setting and never travels through Redis; the report says
who records it (``SweepEnvelope.recorder``, written as ``metadata.history``: ``submitter``,
``worker`` or ``off``).

Recording is idempotent, so the hook runs on every delivery of ``farm.report``: a delivery that
died after storing the report but before recording still gets the sweep recorded. Failures are
logged, never raised: the report itself is already safe in the store.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

from farm.models import SweepReport

log = logging.getLogger("farm.history")


def record_finished_sweep(load_report: Callable[[], SweepReport | None],
                          env: Mapping[str, str] | None = None) -> str | None:
    """Record the sweep (and run the nightly loop for a nightly one) if this worker is the recorder.

    ``load_report`` is called only when ``FARM_HISTORY_URL`` is set. Returns what was done
    (``recorded``, ``nightly``) or None.
    """
    env = os.environ if env is None else env
    url = env.get("FARM_HISTORY_URL")
    if not url:
        return None
    try:
        report = load_report()
        if report is None or report.envelope.recorder != "worker":
            return None
        return _record(url, report, env)
    except Exception:  # the report is stored already; a history that fails must not fail the task
        log.critical("history: could not record the sweep", exc_info=True)
        return None


def _record(url: str, report: SweepReport, env: Mapping[str, str]) -> str:
    from farm.history.nightly import NightlySettings, is_nightly, run_nightly
    from farm.history.store import HistoryStore

    store = HistoryStore.open(url)
    try:
        if is_nightly(report):
            run_nightly(store, report, NightlySettings.from_env(env))
            return "nightly"
        store.record(report)
        return "recorded"
    finally:
        store.close()
