"""The models every other models module builds on: the JSON value, the base model, an
assertion (and the per-case base that shares fields sets), a check's outcome and a run's status.

They live apart from ``farm.models`` so that the dynamic-case and statistics models can build
on them without importing ``farm.models``, which re-exports both (no import cycle).
"""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, ConfigDict

JsonValue = Any
"""Any JSON value: None, bool, int, float, str, list, dict."""


class FarmModel(BaseModel):
    """Base of all farm models: strict about unknown fields.

    Not frozen: a builder fills in the value it makes as it goes (``execute_run`` its ``RunResult``
    turn by turn, the accumulator a case's statistics). Once a value is handed on it is not
    assigned to; who needs it changed builds a new one (``model_copy(update=...)``, e.g.
    ``farm.run.failures.classified``, the fleet's cost accounting, the workers' sweep id). Small
    values made whole at once are frozen (``SweepOutcome``, ``BudgetFigures``)."""

    model_config = ConfigDict(extra="forbid", frozen=False)


_SHARED_FIELD_SETS: dict[frozenset[str], set[str]] = {}
_MAX_SHARED_FIELD_SETS = 4096


class PerCaseModel(FarmModel):
    """Base of the models a suite holds once per case (a million cases: a million of each).

    Pydantic gives every instance its own ``__pydantic_fields_set__``, a set sized for growth:
    2.2 KB of a Case's 6 KB. Instances with the same fields set share one set here; farm models
    are never assigned to after they are built, so nothing adds to a shared set (``model_copy``
    copies the set before updating it).
    """

    def model_post_init(self, context: Any, /) -> None:
        fields = self.__pydantic_fields_set__
        shared = _SHARED_FIELD_SETS.get(frozenset(fields))
        if shared is None:
            if len(_SHARED_FIELD_SETS) >= _MAX_SHARED_FIELD_SETS:
                return
            shared = _SHARED_FIELD_SETS.setdefault(frozenset(fields), set(fields))
        object.__setattr__(self, "__pydantic_fields_set__", shared)


class Assertion(PerCaseModel):
    """One Yao assertion (``assert`` entry, or the ``equals`` check made from ``expected``).

    Validated at load time by ``farm.checks.spec``; evaluated by ``farm.checks.yao``.
    """

    type: str = "equals"
    """``equals``, ``contains``, ``not_contains``, ``regex``, ``type``, ``json_path``, ``script``,
    ``agent``, ``tool_called`` or ``tool_result``."""
    value: JsonValue = None
    has_value: bool = False
    """Whether ``value`` was given (``null`` is a legitimate value to compare with)."""
    path: str | None = None
    """JSONPath, for ``json_path``."""
    script: str | None = None
    """``module:function`` or ``file.py:function``, for ``script``."""
    use: str | None = None
    """Judge for ``agent``: a connector id or ``agents:<agent id>``."""
    options: dict[str, JsonValue] | None = None
    """Yao's judge ``options`` of an ``agent`` check: ``connector`` (the judge when ``use`` names
    none), ``metadata`` (accepted, not sent: the farm's judges get ``{output, input, criteria}``)."""
    message: str | None = None
    """Custom failure message."""
    negate: bool = False
    where: str = ""
    """Key path of the assertion in its file (``assert[1]``), used in failure messages."""


class CheckOutcome(FarmModel):
    """What one check concluded about one reply."""

    name: str
    """The check, as a user reads it: ``contains``, ``text.keywords``, ``structure.answer.value``."""
    passed: bool
    message: str = ""
    actual: JsonValue = None
    """The value the check looked at (truncated when large)."""
    expected: JsonValue = None
    turn: int = 1
    """1-based turn the check belongs to."""
    verdict: str | None = None
    """Judge checks: ``pass``, ``fail``, ``equivocal`` (no decision) or ``error`` (the judge could not be asked)."""
    reason: str | None = None
    """Judge checks: the judge's reason."""


class RunStatus(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
