"""A suite's secret variables, read where the run runs (SPEC 26).

A HOCON ``${?OPENAI_API_KEY}`` stays as written in the plan (``farm.suites.hocon_guard``), so no
secret is stored in Redis; each run reads the variable from the environment of the process that
runs it (a worker's, in a distributed sweep), registers its value as a secret there, and gives back
a result with it masked: whatever is built from results (a worker's report, ``farm results``, the
terminal summary) never holds it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from farm.agents.secrets import any_secret, redacted, resolve_deferred
from farm.errors import AgentResolutionError
from farm.models import Case, ErrorInfo, RunResult, RunStatus
from farm.models.base import utc_now
from farm.models.failure_class import classified


async def run_resolved(case: Case, run: int, sweep_id: str | None,
                       execute: Callable[[Case], Awaitable[RunResult]]) -> RunResult:
    """``execute`` the case with its ``env_refs`` read from this process's environment; the result masked.

    A mandatory ``${NAME}`` unset here is an error run naming the variable (the agent is not called).
    """
    try:
        resolved = Case.model_validate(resolve_deferred(case.model_dump(mode="json"), case.env_refs or (),
                                                        where=f"case {case.id}"))
    except AgentResolutionError as exc:
        return classified(RunResult(case_id=case.id, run=run, status=RunStatus.ERROR, sweep_id=sweep_id,
                                    started_at=utc_now(), error=ErrorInfo.from_exception(exc)))
    return masked(await execute(resolved))


def masked(result: RunResult) -> RunResult:
    """``result`` with every registered secret masked (an agent may echo what the suite substituted,
    an exception may quote a URL's password); ``result`` itself when none is registered."""
    if not any_secret():  # the common case: no cost per run
        return result
    data = result.model_dump(mode="json")
    found = redacted(data)
    return result if found is data else RunResult.model_validate(found)


__all__ = ["masked", "run_resolved"]
