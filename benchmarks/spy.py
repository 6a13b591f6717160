"""Sampling profiles of running processes (a worker, a submitter) with py-spy, and their summary.

py-spy (``pip install py-spy``) samples any Python process from outside, every thread, so it
sees a Celery threads pool that cProfile cannot. Only the samples of the thread holding the
GIL are kept (``--gil``): that is where a GIL-bound worker's CPU goes.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

CATEGORIES: Sequence[tuple[str, Sequence[str]]] = (
    ("farm.run task body (workers.runs.run_one)", ("run_one (",)),
    ("  the run itself (farm.run.execute.execute_run)", ("execute_run (",)),
    ("  Redis: before_run + store_run", ("before_run (", "store_run (")),
    ("farm.aggregate (aggregate_case)", ("aggregate_case (",)),
    ("farm.report (report_sweep)", ("report_sweep (",)),
    ("chord bookkeeping (on_chord_part_return)", ("on_chord_part_return (",)),
    ("result backend: store_result", ("store_result (",)),
    ("task events (Flower)", ("events/dispatcher.py", "send_event (")),
    ("logging", ("logging/__init__.py",)),
    ("kombu: receive and ack", ("kombu/transport/", "kombu/message.py")),
    ("publishing (apply_async)", ("apply_async (",)),
    ("reading the event stream (submitter)", ("read_events (",)),
    ("observers: JSONL, progress (submitter)", ("on_result (", "on_case (")),
    ("pydantic", ("pydantic",)),
    ("json", ("json/",)),
)
"""Inclusive share of samples whose stack holds one of these substrings (they overlap)."""


def available() -> bool:
    return shutil.which("py-spy") is not None


@contextlib.contextmanager
def recording(pid: int, out: Path, *, rate: int = 250) -> Iterator[None]:
    """py-spy samples ``pid`` for the duration of the block; collapsed stacks land in ``out``."""
    if not available():
        yield
        return
    cmd = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--gil", "--threads", "--subprocesses",
           "--rate", str(rate), "--nonblocking", "--output", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def load(path: Path) -> list[tuple[list[str], int]]:
    stacks = []
    if not path.exists():
        return stacks
    for line in path.read_text(errors="replace").splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks.append((frames.split(";"), int(count)))
    return stacks


def summarize(path: Path, *, top: int = 15) -> dict[str, object]:
    """Inclusive shares by category, and the functions with the most self samples."""
    stacks = load(path)
    total = sum(n for _, n in stacks) or 1
    shares: dict[str, float] = {}
    for name, markers in CATEGORIES:
        hit = sum(n for frames, n in stacks if any(m in f for f in frames for m in markers))
        shares[name] = hit / total
    leaves: Counter[str] = Counter()
    for frames, n in stacks:
        leaves[_short(frames[-1])] += n
    return {"samples": total, "categories": shares,
            "top_self": [(name, n / total) for name, n in leaves.most_common(top)]}


def _short(frame: str) -> str:
    for marker in ("site-packages/", "python3.11/", "/work/main/"):
        if marker in frame:
            head, _, tail = frame.partition("(")
            return f"{head}({tail.split(marker, 1)[-1]}"
    return frame


def render(summary: dict[str, object]) -> str:
    lines = [f"samples (GIL held): {summary['samples']}", "inclusive share by area:"]
    for name, share in summary["categories"].items():  # type: ignore[attr-defined]
        lines.append(f"  {share:6.1%}  {name}")
    lines.append("hottest functions (self):")
    for name, share in summary["top_self"]:  # type: ignore[attr-defined]
        lines.append(f"  {share:6.1%}  {name}")
    return "\n".join(lines)
