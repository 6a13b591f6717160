"""``farm test``'s Yao extras around a sweep (their flags: ``farm.cli.yao_flags``): the load notes,
``--collect-only`` and ``--dry-run`` (one listing, two shapes), and the global ``--before``/``--after``
hooks (``farm.suites.hooks.SweepHooks``).

``run_test`` calls ``start_extras`` once the sweep is prepared (before any history or executor:
a dry run records nothing and starts nothing) and runs the sweep through ``SweepAround.run``, so
``--after`` sees the report, or None when the sweep failed.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.console import Console

from farm.agents.base import AgentContext
from farm.api import PreparedSweep
from farm.cli.console import say
from farm.models import JsonValue, SweepReport
from farm.plan.yao_options import dry_run_lines
from farm.run.environment import sweep_context
from farm.suites.hooks import SweepHooks
from farm.wording import plural

__all__ = ["SweepAround", "start_extras"]


@dataclass(frozen=True)
class SweepAround:
    """The ``--before``/``--after`` hooks of one sweep, with what ``--before`` returned."""

    hooks: SweepHooks
    context: AgentContext
    before_data: JsonValue
    err: Console

    def run(self, sweep: Callable[[], SweepReport]) -> SweepReport:
        """``sweep()``, then ``--after`` even when the sweep raised (a failing hook is a warning)."""
        report = None
        try:
            report = sweep()
        finally:
            if warning := self.hooks.after_all(self.context, report, self.before_data):
                say(self.err, f"farm: warning: {warning}")
        return report


LINES_PER_WRITE = 10_000
"""Lines joined into one write when listing cases: a write per line cost 1 s for a million ids
(the text layer's work per call), a write per 10,000 lines 0.04 s."""


def write_lines(lines: Iterable[str]) -> None:
    """Each of ``lines`` on stdout, ``LINES_PER_WRITE`` at a time (memory stays bounded)."""
    rest = iter(lines)
    while chunk := list(itertools.islice(rest, LINES_PER_WRITE)):
        sys.stdout.write("\n".join(chunk) + "\n")
    sys.stdout.flush()


def start_extras(prepared: PreparedSweep) -> SweepAround | None:
    """Print the load notes; for ``--collect-only`` and ``--dry-run`` list the cases and return
    None (nothing runs); else resolve the hooks and run ``--before``.

    Raises:
        SettingsError: a hook reference that does not resolve (exit 2).
        FarmRuntimeError: ``--before`` raised (exit 3, nothing ran).
    """
    err, extras = Console(stderr=True), prepared.specs.extras
    for note in prepared.loaded.notes:
        say(err, f"farm: note: {note}")
    if extras.listing is not None:
        write_lines(dry_run_lines(prepared.plan.cases) if extras.listing == "json" else prepared.listed or [])
        plan = prepared.plan
        say(err, f"collected {plural(plan.total_cases, 'case')} ({plural(plan.total_runs, 'run')})")
        return None
    hooks = SweepHooks.resolve(extras.before, extras.after, extras.cwd)
    context = sweep_context(prepared.plan.env)
    before_data = hooks.before_all(context, lambda: [c.case for c in prepared.plan.cases])
    return SweepAround(hooks, context, before_data, err)
