"""agent-farm: a test farm for AI agents.

The CLI (``farm test``) is the main entry point; the same sweep runs from Python::

    from farm import TestSettings, run_sweep, write_report
    report = run_sweep(TestSettings(input="suite.jsonl", name="py:agent.py:respond", runs=5))
    write_report(report, "report.html")        # the format follows the extension, as -o
    print(report.summary.overall_pass_rate)

Inside a running event loop (Jupyter, pytest-asyncio, FastAPI) ``await arun_sweep(settings)``;
``run_sweep`` there raises a clear error instead of leaking a coroutine.
"""

from farm.agents.base import AgentContext
from farm.lifecycle import SweepStop
from farm.models import Case, CaseStats, Reply, RunResult, RunStatus, SweepReport
from farm.outputs import write_report
from farm.suites import load_input
from farm.sweep import TestSettings, arun_sweep, run_sweep

__all__ = [
    "AgentContext",
    "Case",
    "CaseStats",
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
__version__ = "0.1.0"
