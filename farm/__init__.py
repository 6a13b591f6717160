"""agent-farm: a test farm for AI agents.

The CLI (``farm test``) is the main entry point; the same sweep runs from Python::

    from farm import TestSettings, run_sweep, write_report
    report = run_sweep(TestSettings(input="suite.jsonl", name="py:agent.py:respond", runs=5))
    write_report(report, "report.html")        # the format follows the extension, as -o
    print(report.summary.overall_pass_rate)

Inside a running event loop (Jupyter, pytest-asyncio, FastAPI) ``await arun_sweep(settings)``;
``run_sweep`` there raises a clear error instead of leaking a coroutine.

The package stands in floors, each importing only the floors below it. Under the sweep's own
parts (models, suites, checks, agents, plan, run, stats, …) the upper floors are, bottom up:
``reports`` < ``sweep`` < ``distributed`` < ``judgecheck`` < ``history`` < ``api`` < this module
(the package's face: it re-exports, and no module below it imports it) < ``cli``; ``workers/``,
beside ``farm/``, is above them all (``tests/project/test_layout.py`` holds the order).
"""

import importlib
import typing

from farm import defaults as _defaults

if typing.TYPE_CHECKING:
    from farm.agents.base import AgentContext
    from farm.api import TestSettings, arun_sweep, run_sweep
    from farm.matrix.arms import MatrixFlags
    from farm.models import Case, CaseStats, Reply, RunResult, RunStatus, SweepReport
    from farm.reports.outputs import write_report
    from farm.suites import load_input
    from farm.sweep.lifecycle import SweepStop

_HOMES = {
    "AgentContext": "farm.agents.base", "SweepStop": "farm.sweep.lifecycle", "Case": "farm.models",
    "CaseStats": "farm.models", "Reply": "farm.models", "RunResult": "farm.models", "RunStatus": "farm.models",
    "SweepReport": "farm.models", "write_report": "farm.reports.outputs", "load_input": "farm.suites",
    "TestSettings": "farm.api", "arun_sweep": "farm.api", "run_sweep": "farm.api", "MatrixFlags": "farm.matrix.arms",
}
"""Public name → its module, imported on first use (PEP 562): ``import farm.x`` (the CLI, the
pytest plugin every pytest run loads) must not pay for the whole API (~0.5 s)."""


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'farm' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later reads are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "AgentContext",
    "Case",
    "CaseStats",
    "MatrixFlags",
    "Reply",
    "RunResult",
    "RunStatus",
    "SweepReport",
    "SweepStop",
    "TestSettings",
    "arun_sweep",
    "load_input",
    "run_sweep",
    "write_report",
]
__version__ = _defaults.FARM_VERSION
