"""Processes an agent leaves behind: taken back by the farm and ended with their run.

A process whose parent exits is re-parented to the nearest *child subreaper* among its
ancestors (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux), else to init, where nothing would ever end
it. The processes that run agents (``farm test``, each ``farm worker`` process, ``--isolate``
processes) become subreapers, so what an agent forks — ``setsid`` daemons included, which leave
its process group — comes back to them:

- a ``cmd:`` program's leftovers carry a mark in their environment (``MARK_VAR``, one per turn)
  and are ended when the turn ends (``end_turn_leftovers``);
- an ``--isolate`` process runs one call at a time: everything under it is ended after each call;
- whatever is still under the process when it finishes (a Python agent's own subprocesses) is
  ended then (``end_descendants``). One that exits before stays a zombie until then: nothing
  tells it from the process's own children (Celery's pool processes, asyncio's), whose exits
  their owners collect by pid; only a turn's ``setsid`` child is known (``PROGRAMS``).

What is not contained: a process that clears its environment and escapes the subreaper's reach
by other means (a double fork under another subreaper, a systemd unit), and a Python agent's
*threads* in a shared process, which no signal can end without ending the worker. Elsewhere than
Linux ``become_subreaper`` is a no-op and a marked process is still found by its environment.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil  # imported where a process is looked at: a sweep whose agents leave none never loads it

PR_SET_CHILD_SUBREAPER = 36
MARK_VAR = "FARM_AGENT_MARK"
"""Environment variable set in a ``cmd:`` program's environment: its leftovers are found by it."""
REAP_S = 2.0
"""At most this long collecting the exits of killed processes that come back to us while dying."""
UNSURE_S = 0.5
"""At most this long looking again at a child whose environment reads empty (mid-``exec``: a
window of microseconds, stretched by a busy machine; a process run with no environment at all
would otherwise hold every turn's end)."""


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); False where it cannot be (elsewhere, or refused)."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    return False


def new_mark() -> str:
    """A fresh mark for one turn's program."""
    return uuid.uuid4().hex


def _mark_of(process: psutil.Process) -> str | None:
    """The process's mark; ``""`` when it has none, None when its environment cannot be read now:
    a zombie, gone, not ours, or between two programs (the kernel shows an empty environment while
    ``exec`` sets up the next program, and while a process exits)."""
    import psutil

    try:
        environ = process.environ()
    except (psutil.Error, OSError):
        return None
    return str(environ.get(MARK_VAR, "")) if environ else None


def _marked(process: psutil.Process, mark: str) -> bool:
    return _mark_of(process) == mark


def _kill(processes: list[psutil.Process]) -> None:
    if not processes:
        return
    import psutil

    for process in processes:
        with contextlib.suppress(psutil.Error, OSError):
            process.send_signal(signal.SIGKILL)
    _reap({p.pid for p in processes})


def _reap(pids: set[int]) -> None:
    """Collect the exit of the killed processes that are (or become, their parent dying) our
    children: no zombies left. Bounded: one whose parent outlives this is that parent's to reap."""
    deadline = time.monotonic() + REAP_S
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    pids.discard(pid)
            except ChildProcessError:  # not (yet) ours: gone, or its dying parent's still
                import psutil

                if not psutil.pid_exists(pid):
                    pids.discard(pid)
        if pids:
            time.sleep(0.01)


def _direct_children() -> list[int]:
    """This process's children, cheaply: ``/proc/self/task/*/children`` (Linux), else psutil's scan."""
    pids: list[int] = []
    try:
        for task in os.scandir("/proc/self/task"):
            with open(f"{task.path}/children", encoding="ascii") as listing:
                pids += [int(p) for p in listing.read().split()]
    except OSError:
        import psutil

        with contextlib.suppress(psutil.Error):
            return [c.pid for c in psutil.Process().children()]
    return pids


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Programs:
    """The ``cmd:`` programs this process is starting or running. Their exits are asyncio's to
    collect, so a zombie session leader is reaped here only when it is none of them and none is
    being started (a program that exits at once is a zombie before its pid is known)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starting = 0
        self.started: dict[int, float] = {}  # pid -> its start time (psutil's clock)

    @contextlib.contextmanager
    def start(self) -> Iterator[list[int]]:
        """Around the start of a program: append its pid to the yielded list once it runs."""
        pids: list[int] = []
        with self.lock:
            self.starting += 1
        try:
            yield pids
        finally:
            with self.lock:
                self.starting -= 1
                for pid in pids:
                    import psutil

                    with contextlib.suppress(psutil.Error):
                        self.started[pid] = psutil.Process(pid).create_time()

    def adopted_zombie(self, process: psutil.Process, group: int) -> bool:
        """A zombie session leader (a ``setsid`` child that exited before its parent, then came
        back to us) started during the turn whose program led ``group``: no one else will reap it."""
        with self.lock:
            since = self.started.get(group)
            if since is None or self.starting or process.pid in self.started:
                return False
        import psutil

        with contextlib.suppress(psutil.Error, OSError):
            return bool(process.status() == psutil.STATUS_ZOMBIE and os.getsid(process.pid) == process.pid
                    and process.create_time() >= since)
        return False

    def ended(self, group: int) -> None:
        with self.lock:
            self.started.pop(group, None)


PROGRAMS = _Programs()


def _leftovers(mark: str, group: int) -> tuple[list[psutil.Process], bool]:
    """Our children that belong to the turn: members of its program's group (zombies included:
    they came back to us) or carrying its mark (``setsid`` ones), with what each started; and the
    zombies of the turn's ``setsid`` children that exited on their own. True beside them when a
    live child could not be told (its environment unreadable: mid-``exec``, as a ``setsid``
    child is between ``setsid`` and its program): look again."""
    import psutil

    found: dict[int, psutil.Process] = {}
    unsure = False
    for pid in _direct_children():
        with contextlib.suppress(psutil.Error, OSError):
            process = psutil.Process(pid)
            own = _mark_of(process)
            # a zombie of the group (its environment unreadable), or a live process with this turn's mark;
            # never another turn's program, even one given this group's id again after a pid wrap
            if own == mark or (own is None and (os.getpgid(pid) == group or PROGRAMS.adopted_zombie(process, group))):
                found[pid] = process
                found.update((c.pid, c) for c in process.children(recursive=True))
            elif own is None and process.status() != psutil.STATUS_ZOMBIE:
                unsure = True
    return list(found.values()), unsure


def end_turn_leftovers(mark: str, group: int) -> int:
    """After a ``cmd:`` program's exit (its group SIGKILLed, the program reaped): end and reap what
    it left behind — its group's last members and every process carrying ``mark``. As a subreaper
    they are all our children once their parents are gone; elsewhere, the marked ones are found
    among all processes. Bounded by ``REAP_S``. Returns how many processes were ended."""
    try:
        return _end_leftovers(mark, group) if _SUBREAPER else _end_marked_anywhere(mark)
    finally:
        PROGRAMS.ended(group)


def _end_leftovers(mark: str, group: int) -> int:
    ended: set[int] = set()
    started = time.monotonic()
    while True:
        found, unsure = _leftovers(mark, group)
        left = [p for p in found if p.pid not in ended]
        _kill(left)
        ended.update(p.pid for p in left)
        waited = time.monotonic() - started
        if (not left and not _group_alive(group) and not (unsure and waited < UNSURE_S)) or waited > REAP_S:
            return len(ended)
        if not left:
            time.sleep(0.01)  # a member of the group is still dying (its children come back to us then), or mid-exec


def _end_marked_anywhere(mark: str) -> int:
    import psutil

    try:
        found = [p for p in psutil.process_iter() if _marked(p, mark)]
    except psutil.Error:
        return 0
    _kill(found)
    return len(found)


def end_descendants(keep: frozenset[int] = frozenset()) -> int:
    """SIGKILL everything still running under this process but its children in ``keep`` and what
    those started (at its end, or after an isolated call): ``end_strays``."""
    return end_strays(set(keep))


def end_strays(keep: set[int]) -> int:
    """SIGKILL this process's children other than ``keep`` (and what they started): a supervisor's
    orphans, come back to it when the worker process that owned them died."""
    strays: dict[int, psutil.Process] = {}
    for pid in _direct_children():
        if pid in keep:
            continue
        import psutil

        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            strays[pid] = process
            strays.update((c.pid, c) for c in process.children(recursive=True))
    _kill(list(strays.values()))
    return len(strays)


@contextlib.contextmanager
def contained() -> Iterator[None]:
    """Inside: this process is a subreaper; at the end, whatever started under it meanwhile and
    still runs is ended (its children from before, and theirs, are left alone: ``farm test`` called
    in a test process)."""
    adopt_orphans()
    before = frozenset(_direct_children())
    try:
        yield
    finally:
        end_descendants(keep=before)


_SUBREAPER = False


def adopt_orphans() -> bool:
    """``become_subreaper`` once for this process, remembered for ``end_turn_leftovers``."""
    global _SUBREAPER
    if not _SUBREAPER:
        _SUBREAPER = become_subreaper()
    return _SUBREAPER


__all__ = ["MARK_VAR", "PROGRAMS", "adopt_orphans", "become_subreaper", "contained", "end_descendants", "end_strays",
           "end_turn_leftovers", "new_mark"]
