"""Run ``farm test`` at one commit: in its worktree, with the worktree as working directory and
first on ``sys.path`` (``PYTHONPATH``), so its suites and ``py:`` agents are that commit's.

The user's ``farm test`` arguments are passed as given, then the probe's own: ``--runs``, ``-k``
for the cases under bisection (each as an exact glob), the JSON report it reads, ``--tag
bisect=<id>`` for the history. A ``farm test`` that ends with anything but 0 or 1 (bad input at
that commit, a crash) is a probe that could not run (exit 3).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from farm.bisect.git import Worktrees
from farm.errors import FarmRuntimeError
from farm.models import SweepReport
from farm.plan.batch import exact_pattern


class ProbeError(FarmRuntimeError):
    """A probe's ``farm test`` could not run (exit 3); ``probe_exit``: what that ``farm test`` exited."""

    def __init__(self, message: str, probe_exit: int | None = None) -> None:
        super().__init__(message)
        self.probe_exit = probe_exit


@dataclass
class ProbeRunner:
    trees: Worktrees
    subdir: Path
    """The working directory relative to the repository's root (farm bisect's, in each worktree)."""
    args: Sequence[str]
    bisect_id: str

    def report(self, sha: str, runs: int, cases: Sequence[str] = ()) -> SweepReport:
        tree = self.trees.get(sha)
        out = self.trees.base / f"{sha[:12]}-{len(os.listdir(self.trees.base))}.json"
        extra = ["--no-progress", "--runs", str(runs), "-o", str(out), "--tag", f"bisect={self.bisect_id}"]
        for case_id in cases:
            extra += ["-k", exact_pattern(case_id)]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
        done = subprocess.run([sys.executable, "-m", "farm", "test", *self.args, *extra], cwd=tree / self.subdir,
                              env=env, capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1) or not out.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ProbeError(f"probe at {sha[:12]}: farm test exited {done.returncode}: {last}", done.returncode)
        from farm.reports import parse_json_report

        return parse_json_report(out.read_text(encoding="utf-8"))

    def passes(self, sha: str, runs: int, cases: Sequence[str]) -> tuple[int, int]:
        """(passed, scored runs) of ``cases`` run ``runs`` times each at ``sha``."""
        return pooled(self.report(sha, runs, cases), cases)


def pooled(report: SweepReport, cases: Sequence[str]) -> tuple[int, int]:
    """(passed, scored runs) of ``report``'s ``cases`` together."""
    chosen = [c for c in report.results if c.id in set(cases)]
    return sum(c.passed for c in chosen), sum(c.runs - c.skipped for c in chosen)
