"""``farm test`` as a library: settings → loaded, resolved, planned sweep → outputs.

``TestSettings`` is every flag as given (``settings``); ``resolve_specs`` reads it once into what
each stage takes (``specs``: batch planning, fleet control, the outputs, the executor, the
history's facts, Yao's extras, the agent options, the suite's source, the runs' environment,
the plan's shape, the envelope's flags and how the plan keeps its cases, carried by
``PreparedSweep.specs``); ``prepare_sweep`` loads,
resolves, plans and checks the outputs before the first run (``prepare``); ``run_sweep`` and
``arun_sweep`` run it on the executor ``create_executor`` picks (``run``). No stage below
``farm.api`` takes ``TestSettings`` whole, and the CLI, having built it, goes on with the specs.
"""

from farm.api.prepare import PLAN_BATCH, PreparedSweep, prepare_sweep
from farm.api.run import arun_sweep, create_executor, run_sweep
from farm.api.settings import TestSettings
from farm.api.specs import SweepExtras, SweepSpecs, agent_options, resolve_specs

__all__ = ["PLAN_BATCH", "PreparedSweep", "SweepExtras", "SweepSpecs", "TestSettings", "agent_options",
           "arun_sweep", "create_executor", "prepare_sweep", "resolve_specs", "run_sweep"]
