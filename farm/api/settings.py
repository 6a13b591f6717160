"""``farm test``'s flags as a library takes them: ``TestSettings``, every flag already parsed, and
the check of its numbers that runs before anything is read (bad ones are exit 2, nothing run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from farm.defaults import DEFAULT_PARALLEL, MAX_RUNS_PER_CASE
from farm.errors import SettingsError
from farm.matrix.arms import MatrixFlags
from farm.plan.fleet import FleetFlags
from farm.settings import semantic_cache_entries, semantic_enabled
from farm.stats import check_ramp


@dataclass(frozen=True)
class TestSettings:
    """Every flag of ``farm test`` (SPEC 3, 10), already parsed."""

    __test__ = False  # not a pytest class

    input: str | None = None
    """``-i``: a suite file, a directory of suites, or a message that cannot be a path."""
    message: str | None = None
    """``-m``: send this text to the agent (direct message mode)."""
    outputs: tuple[str, ...] = ()
    """``-o``, repeatable: each format rendered from the same sweep."""
    name: str | None = None
    connector: str | None = None
    user: str | None = None
    team: str | None = None
    reporter: str | None = None
    runs: int | None = None
    timeout_s: float | None = None
    parallel: int = DEFAULT_PARALLEL
    verbose: bool = False
    fail_fast: bool = False
    isolate: bool = False
    """``--isolate``: sync python agents run in a pool of subprocesses (AgentOptions.isolate)."""
    broker: str | None = None
    queue: str = "farm"
    detach: bool = False
    min_pass_rate: float = 1.0
    min_overall_pass_rate: float | None = None
    """Suite-level gate (0–1, run-weighted), on top of the per-case verdicts."""
    judge: str | None = None
    server: str | None = None
    patterns: tuple[str, ...] = ()
    """``-k``, repeatable: a case runs when its id contains any of them (a glob when it has ``*?[``)."""
    neuro_san_compat: bool = False
    confirm_failures: int = 1
    run_pattern: str | None = None
    """``--run REGEX`` (Yao's case filter)."""
    ctx: str | None = None
    """``--ctx FILE``: Yao's context file for every call."""
    collect_only: bool = False
    """``--collect-only``: validate and list the case ids; call no agent."""
    dry_run: bool = False
    """``--dry-run``: as ``collect_only``, listing each case as a JSON line."""
    simulator: str | None = None
    """``--simulator REF``: the simulator of every dynamic case."""
    before: str | None = None
    after: str | None = None
    yao_compat: bool = False
    allow_remote_includes: bool = False
    """``--allow-remote-includes``: HOCON includes of URLs are fetched (refused otherwise)."""
    fleet: FleetFlags = field(default_factory=FleetFlags)
    """Rate limits, budget, adaptive runs, judge cache, record/replay (SPEC 13)."""
    matrix: MatrixFlags = field(default_factory=MatrixFlags)
    """``--arm``, ``--matrix``, ``--baseline-arm``, ``--seed`` (SPEC 22)."""
    semantic: bool | None = None
    """False: no semantic figures (``--no-semantic``); None: ``FARM_SEMANTIC`` decides (default on)."""
    ramp: tuple[int, ...] | None = None  # --ramp 2,4,8,16: each case's runs at each concurrency (farm.stats.ramp)
    cwd: str = field(default_factory=lambda: str(Path.cwd()))

    def semantic_figures(self) -> bool:
        """Whether the sweep computes semantic figures: ``--no-semantic``, else ``FARM_SEMANTIC``."""
        return semantic_enabled() if self.semantic is None else self.semantic

    def check(self) -> None:
        """The flags' numbers and pairings, checked before anything is read: bad ones are exit 2."""
        self.semantic_figures()  # a bad FARM_SEMANTIC or FARM_SEMANTIC_CACHE: exit 2 before anything runs
        semantic_cache_entries()
        if self.runs is not None and self.runs < 1:
            raise SettingsError(f"--runs {self.runs}: must be at least 1")
        if self.runs is not None and self.runs > MAX_RUNS_PER_CASE:
            raise SettingsError(f"--runs {self.runs}: must be at most {MAX_RUNS_PER_CASE:,} (runs of each case)")
        if self.parallel < 1:
            raise SettingsError(f"--parallel {self.parallel}: must be at least 1")
        for flag, rate in (("--min-pass-rate", self.min_pass_rate),
                           ("--min-overall-pass-rate", self.min_overall_pass_rate)):
            if rate is not None and not 0.0 <= rate <= 1.0:
                raise SettingsError(f"{flag} {rate}: must be between 0 and 1 (or 0% to 100%)")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise SettingsError("--timeout: must be positive")
        if self.detach and not self.broker:
            raise SettingsError("--detach needs --broker (or FARM_BROKER_URL): only a distributed sweep can detach")
        check_ramp(self.ramp, broker=self.broker, adaptive=self.fleet.adaptive_rule() is not None,
                   matrix=self.matrix.given)


__all__ = ["TestSettings"]
