"""Recording a sweep in the history beside it: a child process opens the store while the sweep runs.

Opening the history costs a process about 0.1–0.2 s (SQLAlchemy's import, the engine, the schema
check; more against a distant PostgreSQL), which ``farm test`` used to pay after its last run, on
the sweep's core. ``farm test`` now starts ``python -m farm.history.recorder`` first thing
(``early_recorder``): the child loads SQLAlchemy and opens (and migrates) the store on another
core while the command loads and runs the sweep, then records the report it is handed at the end
with ``record_report`` — the same function ``farm results`` calls in-process — and answers with
the warning to print, if any. The price is a second interpreter holding SQLAlchemy (~50 MB)
while the sweep runs. A child that cannot run (a frozen farm whose executable takes no ``-m``)
leaves the recording to ``farm test`` itself (``RecorderFailed``).

The exchange is JSON lines over the child's stdin and stdout:

- parent → child, at once: ``{"url": …}`` (a PostgreSQL URL may hold a password: it goes
  through the pipe, never the command line, which ``ps`` shows);
- parent → child, at the end: the baseline link ``{"base_pk": …, "kind": …, "comparison": …}``
  (``{}`` without a baseline), then the report (``SweepReport`` JSON);
- child → parent: ``{"warning": "…" | null}``, then it exits (the parent does not wait for that).

A parent that ends without handing a report (it crashed, it was killed) closes the pipe: the
child exits and records nothing, as the in-process recording would have. The child runs in a
session of its own, so the terminal's Ctrl-C, meant for the sweep, never kills it mid-write.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from farm import collector
from farm.errors import FarmError

if TYPE_CHECKING:  # the parent starts a recorder before its own heavy imports: keep this light
    from farm.history.store import HistoryStore
    from farm.models import SweepReport
    from farm.stats.compare import Comparison

SKIPS_RECORDING = ("no_history", "detach", "message", "estimate", "collect_only", "dry_run")
"""``farm test`` flags with which nothing is recorded by this process."""


def open_store(url: str) -> HistoryStore:
    """The history at ``url``, migrated (SQLAlchemy is imported here, on first use)."""
    with collector.paused():  # SQLAlchemy's modules: nothing to collect (farm.collector)
        from farm.history.store import HistoryStore

    return HistoryStore.open(url)


def record_report(url: str, report: SweepReport, *, store: HistoryStore | None = None,
                  link: tuple[int, str, Comparison] | None = None) -> str | None:
    """Record ``report`` (and its comparison with the baseline sweep ``link``: its key, the
    comparison's kind and the comparison); None, or the warning to print. Never raises: a
    history that cannot be written must not lose the sweep's reports. ``store``: one already
    open (closed here either way)."""
    try:
        store = store or open_store(url)
    except FarmError as exc:
        return f"warning: history not recorded: {exc.message}"
    try:
        head = store.record(report)
        if link is not None:
            base_pk, kind, comparison = link
            store.store_comparison(base_pk, head.pk, kind, comparison)
    except Exception as exc:
        from farm.history.engine import error_reason, safe_url

        return f"warning: history not recorded in {safe_url(url)}: {error_reason(exc)}"
    finally:
        store.close()
    return None


class RecorderFailed(Exception):
    """The child did not answer (it could not start Python, or died): record in-process instead."""


class Recorder:
    """The parent's side: ``Recorder(url)`` as the sweep starts, ``record(...)`` at its end.

    Starting it raises ``OSError`` when no child can be started: record in-process then.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        package_root = str(Path(__file__).resolve().parents[2])  # the child imports this farm
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH"))
                                                           if p)}
        self._child: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "farm.history.recorder"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env, start_new_session=True)
        assert self._child.stdin is not None
        self._child.stdin.write(json.dumps({"url": url}).encode() + b"\n")
        self._child.stdin.flush()

    def record(self, report: SweepReport, link: tuple[int, str, Comparison] | None = None) -> str | None:
        """Hand the report over and wait for the child's answer: None, or the warning to print;
        ``RecorderFailed`` when it gave none (the report may or may not be recorded: recording
        again is harmless, a sweep is stored once by its id)."""
        child, self._child = self._child, None
        if child is None:
            raise RuntimeError("a recorder records one report")
        assert child.stdin is not None and child.stdout is not None
        linked = {} if link is None else {"base_pk": link[0], "kind": link[1],
                                          "comparison": link[2].model_dump(mode="json")}
        answer = b""
        try:
            child.stdin.write(json.dumps(linked).encode() + b"\n" + report.model_dump_json().encode() + b"\n")
            child.stdin.close()
            answer = child.stdout.readline()  # it answers, then exits: not waited for (_collect)
        except BrokenPipeError:  # it died before reading: its stderr says why
            pass
        try:
            said = json.loads(answer)
        except ValueError:
            raise RecorderFailed from None
        finally:
            _collect(child)
        return said["warning"] if isinstance(said.get("warning"), str) else None

    def abandon(self) -> None:
        """No report comes (nothing ran, or the sweep failed): its stdin closed, the child exits
        without recording once its store is open. Not waited for (a PostgreSQL server may keep it
        seconds)."""
        child, self._child = self._child, None
        if child is not None:
            _collect(child)


def _collect(child: subprocess.Popen[bytes]) -> None:
    """Close our ends of the child's pipes; a daemon thread collects its exit."""
    for pipe in (child.stdin, child.stdout, child.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):  # a child gone before reading: the unread end is broken
                pipe.close()
    threading.Thread(target=child.wait, name="farm-recorder-exit", daemon=True).start()


def start_recorder(url: str) -> Recorder | None:
    """A recorder of the history at ``url``; None when no child can start (record in-process)."""
    try:
        return Recorder(url)
    except OSError:
        return None


def early_recorder(flags: dict[str, Any]) -> Recorder | None:
    """``farm test``'s recorder, started before the command's own imports (a head start of ~0.3 s)
    when its flags say this process will record; ``HistorySession.start`` takes it, or it is
    abandoned. None when it will not record."""
    from farm.history.location import history_url

    if any(flags.get(name) for name in SKIPS_RECORDING):
        return None
    return start_recorder(history_url(flags.get("history")))


def _child_main() -> int:
    """``python -m farm.history.recorder``: open the store, record the one report handed over."""
    url = json.loads(sys.stdin.readline())["url"]
    from farm.models import SweepReport  # before the report comes: the parent waits from then on

    try:
        opened = open_store(url)
        opened.engine.dispose()  # no connection idles through the sweep (a server may drop it): one at the end
        store: HistoryStore | None = opened
        cannot_open: str | None = None
    except FarmError as exc:  # told when the report comes, as the in-process recording would
        store, cannot_open = None, f"warning: history not recorded: {exc.message}"
    linked, report = sys.stdin.readline(), sys.stdin.readline()
    if not report:  # the parent ended without a report
        if store is not None:
            store.close()
        return 0
    warning = cannot_open
    if store is not None:
        link, message = None, json.loads(linked)
        if "comparison" in message:
            from farm.stats.compare import Comparison

            link = (int(message["base_pk"]), str(message["kind"]), Comparison.model_validate(message["comparison"]))
        warning = record_report(url, SweepReport.model_validate_json(report), store=store, link=link)
    sys.stdout.write(json.dumps({"warning": warning}) + "\n")
    sys.stdout.flush()
    os._exit(0)  # recorded and closed: the interpreter's teardown (~10-20 ms) would only delay the parent


if __name__ == "__main__":
    raise SystemExit(_child_main())
