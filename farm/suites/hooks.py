"""Yao's before/after hooks as Python callables (SPEC 14; Yao's ``Before``/``After``/``BeforeAll``/``AfterAll``).

A hook is named like a ``script`` check: ``module:function``, ``path/file.py:function`` or the
dotted ``module.function``, relative to the suite file (``--before``/``--after``: to the
working directory). ``async def`` works too. What each gets, in Yao's order:

- ``before(context, case)`` before every run of the case; what it returns goes to ``after``.
  If it raises, the run is an ``error`` (``harness:config``) and ``after`` is not called.
- ``after(context, case, result, before_data)`` after every run whose ``before`` succeeded,
  pass or fail; if it raises, a warning is logged and the run keeps its verdict.
- ``before_all(context, cases)`` once before the sweep; if it raises, nothing runs (exit 3).
- ``after_all(context, report, before_all_data)`` once after the sweep, even a failed one.

``context`` is the run's ``AgentContext`` (the sweep's, for the global hooks), ``case`` a
``Case``, ``result`` a ``RunResult``, ``report`` the ``SweepReport``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from farm.errors import FarmRuntimeError, SettingsError
from farm.imports import call_user, resolve_callable
from farm.models import Case, JsonValue, RunResult, SweepReport

__all__ = ["HookFailedError", "RunHooks", "SweepHooks", "check_hook"]

log = logging.getLogger(__name__)


class HookFailedError(Exception):
    """Raised when a ``before`` hook raises: the run becomes an error."""


def check_hook(ref: Any, base_dir: str) -> str:
    """Problem with a hook reference ('' when it resolves): used when suites load."""
    if not isinstance(ref, str) or not ref.strip():
        return "must be a non-empty string (module:function or file.py:function)"
    try:
        resolve_callable(ref, base_dir)
    except ValueError as exc:
        return str(exc)
    return ""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class RunHooks:
    """The ``before``/``after`` hooks of one run of a case."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self._before_ok = case.before is None
        self._data: Any = None

    async def before(self, context: Any) -> None:
        """Run ``before``; raises ``HookFailedError`` saying what went wrong."""
        if self.case.before is None:
            return
        try:
            fn = resolve_callable(self.case.before, self.case.base_dir)
            self._data = await call_user(fn, context, self.case)
        except Exception as exc:
            raise HookFailedError(f"before hook {self.case.before} failed: {_describe(exc)}") from None
        self._before_ok = True

    async def after(self, context: Any, result: RunResult) -> None:
        """Run ``after`` when ``before`` succeeded; a failure is logged, never raised."""
        if self.case.after is None or not self._before_ok:
            return
        try:
            fn = resolve_callable(self.case.after, self.case.base_dir)
            await call_user(fn, context, self.case, result, self._data)
        except Exception as exc:
            log.warning("case %s run %s: after hook %s failed: %s", self.case.id, result.run, self.case.after,
                        _describe(exc))


@dataclass(frozen=True)
class SweepHooks:
    """``--before``/``--after``: once around the whole sweep."""

    before: Callable[..., Any] | None = None
    after: Callable[..., Any] | None = None
    before_ref: str = ""
    after_ref: str = ""

    @classmethod
    def resolve(cls, before: str | None, after: str | None, base_dir: str) -> SweepHooks:
        """Import both hooks now, so a bad reference exits 2 before anything runs.

        Raises:
            SettingsError: a reference that does not resolve (the message says why).
        """
        fns: dict[str, Callable[..., Any] | None] = {"--before": None, "--after": None}
        for flag, ref in (("--before", before), ("--after", after)):
            if ref is None:
                continue
            try:
                fns[flag] = resolve_callable(ref, base_dir)
            except ValueError as exc:
                raise SettingsError(f"{flag} {ref}: {exc}") from None
        return cls(fns["--before"], fns["--after"], before or "", after or "")

    def before_all(self, context: Any, cases: Callable[[], list[Case]]) -> JsonValue:
        """Run ``--before`` with the sweep's cases (``cases()``: built only for a hook, a big
        distributed plan holds them compact); its result goes to ``--after``.

        Raises:
            FarmRuntimeError: the hook raised (nothing was run).
        """
        if self.before is None:
            return None
        try:
            return asyncio.run(call_user(self.before, context, cases()))
        except Exception as exc:
            raise FarmRuntimeError(f"--before {self.before_ref} failed: {_describe(exc)}") from None

    def after_all(self, context: Any, report: SweepReport | None, data: JsonValue) -> str:
        """Run ``--after``; returns '' or what went wrong (a warning: the sweep's verdict stands)."""
        if self.after is None:
            return ""
        try:
            asyncio.run(call_user(self.after, context, report, data))
        except Exception as exc:
            return f"--after {self.after_ref} failed: {_describe(exc)}"
        return ""
