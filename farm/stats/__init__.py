"""Statistics of a sweep (SPEC 7): plans, incremental per-case accumulation, summary, report.

Pure: no I/O, no Celery. The in-process executor and the ``farm.aggregate`` task both use it.
"""

from __future__ import annotations

from farm.stats.accumulator import DEFAULT_MAX_RUN_DETAILS, CaseAccumulator, run_detail
from farm.stats.fingerprint import case_fingerprint
from farm.stats.measures import WILSON_Z, label_for, percent, stability_class, wilson_interval
from farm.stats.outputs import (
    DEFAULT_MAX_DISTINCT_OUTPUTS,
    DEFAULT_MAX_OUTPUT_CHARS,
    ModeCounter,
    bounded,
    normalise_output,
    output_digest,
)
from farm.stats.passk import DEFAULT_PASS_K, pass_at_k, pass_hat_k, pass_k_figures, pass_ks
from farm.stats.plan import CasePlan, plan_case, required_passes
from farm.stats.ramp import check_ramp
from farm.stats.reasons import failure_reasons
from farm.stats.sweep import (
    below_overall_gate,
    build_report,
    case_verdict,
    exit_code_for,
    is_partial,
    summarize,
    unreachable,
)

__all__ = [
    "DEFAULT_MAX_DISTINCT_OUTPUTS",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "DEFAULT_MAX_RUN_DETAILS",
    "DEFAULT_PASS_K",
    "WILSON_Z",
    "CaseAccumulator",
    "CasePlan",
    "ModeCounter",
    "below_overall_gate",
    "bounded",
    "build_report",
    "case_fingerprint",
    "case_verdict",
    "check_ramp",
    "exit_code_for",
    "failure_reasons",
    "is_partial",
    "label_for",
    "normalise_output",
    "output_digest",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_figures",
    "pass_ks",
    "percent",
    "plan_case",
    "required_passes",
    "run_detail",
    "stability_class",
    "summarize",
    "unreachable",
    "wilson_interval",
]
