"""Failure classes (SPEC 14.2): why a run did not pass, decided from data, before any LLM.

``classify_run`` looks at a finished run: a run past its own timeout is ``timeout``; an error is classed by
its type, an adapter error by the kind its fault mapping gave it (``farm.errors.FaultKind``,
set by ``farm.agents.faults`` for the transport); a failed run by its first failed check, in the
order the checks ran:

    infra:connect | infra:5xx | infra:429 | infra:quota | infra:timeout
        the path to the agent failed (after the retries of SPEC 6); ``infra:timeout`` is a
        transport's read timeout
    timeout
        the run (or a turn) passed its case's ``timeout``: the agent was too slow (SPEC 20)
    harness:parse | harness:config
        the farm could not read an answer, or the test itself is wrong (a bad reference, a
        hook or script that raised, a 4xx the request earned)
    harness:budget | harness:queue_wait | harness:replay
        fleet control ended a run after an earlier call of it was made: the budget refused the
        next call, or no slot came within ``--max-queue-wait`` (or their store failed); a
        recording that is not the call's (SPEC 15)
    assertion:<type>[:<path or checkpoint>]
        a check held false: ``assertion:contains``, ``assertion:json_path:$.a``,
        ``assertion:keywords:text``, ``assertion:value:structure.answer``,
        ``assertion:checkpoint:<id>`` (the first required checkpoint a dynamic run missed)
    judge:equivocal | judge:error
        a judge check could not decide (no pass/fail) or could not be asked
    crashed
        the agent failed on its own (an exception, a non-zero exit, an answer that is an
        error) or the worker running it died

The same run always gets the same class: the rules below read only the run's data.
"""

from __future__ import annotations

from farm.errors import AGENT_BUILD_FAILED, FaultKind
from farm.models import CheckOutcome, ErrorInfo, RunResult, RunStatus, run_status

__all__ = ["CHECKPOINT_PREFIX", "classified", "classify_check", "classify_error", "classify_run", "failure_message",
           "unreached"]

CHECKPOINT_PREFIX = "checkpoint:"
"""Check outcomes of dynamic runs are named ``checkpoint:<id>``."""

_JUDGE_CHECKS = frozenset({"agent", "gist", "not_gist"})
_ERROR_TYPES = {
    "Timeout": "timeout",
    "HookError": "harness:config",
    "SimulatorReplyError": "harness:parse",
    "AgentResolutionError": "harness:config",
    AGENT_BUILD_FAILED: "harness:config",
    "BudgetStoreError": "harness:budget",
    "BudgetRefusedError": "harness:budget",
    "QuotaExhaustedError": "infra:quota",
    "QueueStoreError": "harness:queue_wait",
    "QueueWaitError": "harness:queue_wait",
    "ReplayIntegrityError": "harness:replay",
}
"""Errors the farm makes itself, by type; any other type (the agent's own exception) is ``crashed``."""
_KIND_CLASSES = {
    FaultKind.CONNECT: "infra:connect",
    FaultKind.SERVER: "infra:5xx",
    FaultKind.RATE_LIMIT: "infra:429",
    FaultKind.QUOTA: "infra:quota",
    FaultKind.TIMEOUT: "infra:timeout",
    FaultKind.PARSE: "harness:parse",
    FaultKind.CONFIG: "harness:config",
    FaultKind.AUTH: "harness:config",
    FaultKind.CRASHED: "crashed",
}
"""An adapter error's class, by the kind its fault mapping gave it (``farm.agents.faults``)."""
_MESSAGE_LIMIT = 300


def classify_run(result: RunResult, current_turn: int | None = None) -> tuple[str | None, int | None]:
    """``(failure class, failed turn)`` of a finished run; ``(None, None)`` when it passed or was skipped.

    ``current_turn`` is the turn in progress when the run ended (errors and timeouts happen in it).
    """
    status = run_status(result.status)
    turn = current_turn or (result.turns_completed + 1 if result.turns_completed else 1)
    if status in (RunStatus.PASSED, RunStatus.SKIPPED):
        return None, None
    if status is RunStatus.TIMEOUT:
        return "timeout", turn
    if status is RunStatus.ERROR:
        return classify_error(result.error), turn
    failed = result.failed_checks
    if not failed:
        return "assertion:unknown", turn
    return classify_check(failed[0]), failed[0].turn


UNREACHED_KINDS = frozenset({FaultKind.CONNECT.value, FaultKind.AUTH.value})
"""Error kinds of a run that never reached the agent: a sweep of only such runs is exit 3 (SPEC 20)."""


def unreached(result: RunResult) -> bool:
    """The run failed before the agent answered anything: no connection, or its credentials refused."""
    return result.error is not None and result.error.kind in UNREACHED_KINDS


def classify_error(error: ErrorInfo | None) -> str:
    """The class of a run error: by its type, an adapter error (``AgentError``) by its kind."""
    if error is None:
        return "crashed"
    known = _ERROR_TYPES.get(error.type)
    if known is not None:
        return known
    if error.kind is None:
        return "crashed"  # an exception raised by the agent's own code, or an adapter error of no kind
    try:
        return _KIND_CLASSES[FaultKind(error.kind)]
    except ValueError:  # a kind this version does not know (a newer worker's): still an error of the agent
        return "crashed"


def classify_check(check: CheckOutcome) -> str:
    """The class of a failed check (see the module docstring for the names)."""
    name = check.name.removesuffix(" (negated)")
    if name.startswith(CHECKPOINT_PREFIX):
        return f"assertion:checkpoint:{name[len(CHECKPOINT_PREFIX):]}"
    target, _, test = name.rpartition(".")
    if test in _JUDGE_CHECKS:
        if check.verdict in (None, "error"):
            return "judge:error"  # the judge could not be asked, or its call failed
        if check.verdict == "equivocal":
            return "judge:equivocal"
    if target:  # a neuro-san stock test: text.keywords, structure.answer.value
        return f"assertion:{test}:{target}"
    if name == "script" and " raised " in check.message:
        return "harness:config"
    path = check.expected.get("path") if isinstance(check.expected, dict) and name == "json_path" else None
    return f"assertion:{name}:{path}" if path else f"assertion:{name}"


def failure_message(result: RunResult) -> str:
    """One line saying what went wrong in a run: its error, else its first failed check."""
    if result.error is not None:
        text = result.error.message or result.error.type
    else:
        failed = result.failed_checks
        text = f"{failed[0].name}: {failed[0].message}" if failed else ""
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def classified(result: RunResult, current_turn: int | None = None) -> RunResult:
    """``result`` with its failure class and failed turn (``classify_run``): a new value, the
    given one unchanged (results are data once made)."""
    failure_class, failed_turn = classify_run(result, current_turn)
    return result.model_copy(update={"failure_class": failure_class, "failed_turn": failed_turn})
