"""Bisect the commits between GOOD and BAD with sequential probes (pure: the probe is given).

``probe(commit, runs)`` runs the regressed cases ``runs`` more times each at ``commit`` and returns
(passed, runs made) over them. Each probe runs in batches until the sequential test decides or the cap is reached;
the search keeps the last commit known good and the first known bad and halves the commits
between them. An inconclusive probe steers the search by where it leans, and is reported: the
commits between the last decided-good and the first decided-bad probe remain suspect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from farm.bisect.sequential import Sprt, Verdict

DEFAULT_BATCH = 10
DEFAULT_MAX_RUNS = 50
"""Runs per probe at most."""

Probe = Callable[[str, int], tuple[int, int]]


@dataclass
class ProbeResult:
    commit: str
    runs: int = 0
    passed: int = 0
    verdict: Verdict = "inconclusive"
    leans_bad: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "runs": self.runs, "passed": self.passed, "verdict": self.verdict}


@dataclass
class Bisection:
    """The search's state: what was learned so far (printable after an interrupt too)."""

    commits: list[str]
    """GOOD's descendants up to BAD, oldest first (BAD last; GOOD not among them)."""
    sprt: Sprt
    probes: list[ProbeResult] = field(default_factory=list)
    lo: int = -1
    """Index of the newest commit known good (−1: GOOD)."""
    hi: int = 0
    """Index of the oldest commit known bad."""

    def __post_init__(self) -> None:
        self.hi = len(self.commits) - 1

    @property
    def done(self) -> bool:
        return self.hi - self.lo <= 1

    @property
    def first_bad(self) -> str:
        return self.commits[self.hi]

    def suspects(self) -> list[str]:
        """Commits that may be the first bad one: past the newest decided-good probe, up to the first
        bad one (only first_bad when every probe in the way was decided)."""
        decided = {p.commit: p.verdict for p in self.probes}
        low = max((i for i, c in enumerate(self.commits[: self.hi]) if decided.get(c) == "good"), default=-1)
        high = min((i for i, c in enumerate(self.commits) if i >= self.hi and decided.get(c) == "bad"),
                   default=len(self.commits) - 1)
        return self.commits[low + 1: high + 1]

    def run_probe(self, commit: str, probe: Probe, *, batch: int, max_runs: int) -> ProbeResult:
        result = ProbeResult(commit)
        self.probes.append(result)
        issued = 0  # runs of each case: the cap counts these, however many cases are pooled
        while issued < max_runs and result.verdict == "inconclusive":
            n = min(batch, max_runs - issued)
            passed, runs = probe(commit, n)
            issued += n
            result.passed += passed
            result.runs += runs
            result.verdict = self.sprt.decide(result.passed, result.runs)
        result.leans_bad = result.verdict == "bad" or (
            result.verdict == "inconclusive" and self.sprt.leans_bad(result.passed, result.runs))
        return result

    def step(self, probe: Probe, *, batch: int = DEFAULT_BATCH, max_runs: int = DEFAULT_MAX_RUNS) -> ProbeResult:
        mid = (self.lo + self.hi) // 2
        result = self.run_probe(self.commits[mid], probe, batch=batch, max_runs=max_runs)
        if result.leans_bad:
            self.hi = mid
        else:
            self.lo = mid
        return result

    def run(self, probe: Probe, *, batch: int = DEFAULT_BATCH, max_runs: int = DEFAULT_MAX_RUNS,
            told: Callable[[ProbeResult], None] | None = None) -> None:
        while not self.done:
            result = self.step(probe, batch=batch, max_runs=max_runs)
            if told is not None:
                told(result)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.probes)

    def describe(self, seed_probes: Sequence[ProbeResult] = ()) -> dict[str, Any]:
        probes = [*seed_probes, *self.probes]
        return {"first_bad": self.first_bad if self.done else None, "suspects": self.suspects(),
                "probes": [p.to_json() for p in probes], "runs": sum(p.runs for p in probes),
                "sequential_test": asdict(self.sprt)}
