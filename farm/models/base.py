"""The models every other models module builds on: the JSON value, the base model, an
assertion (and the per-case base that shares fields sets), a check's outcome and a run's status,
and the timestamp every ``*_at`` field holds (``utc_now``).

They live apart from ``farm.models`` so that the dynamic-case and statistics models can build
on them without importing ``farm.models``, which re-exports both (no import cycle).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Self, cast

from pydantic import BaseModel, ConfigDict

JsonValue = Any
"""Any JSON value: None, bool, int, float, str, list, dict."""


def utc_now() -> str:
    """Now, as reports write timestamps (``started_at``, ``completed_at``): ``2026-11-22T10:15:00Z``."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def empty_list() -> list[Any]:
    """``[]``: the default factory of the models' list fields, in place of ``list``. Building a
    model, pydantic asks each field's factory for its signature (does it take the validated
    data?); ``list``'s is parsed from its text signature, copying ``sys.modules`` as it goes
    (~0.15 ms a field, about thirty at every ``farm test``'s start: pydantic#13376), a function's is
    read from its code. The fields' values are the same."""
    return []


class FarmModel(BaseModel):
    """Base of all farm models: strict about unknown fields.

    Not frozen: a builder fills in the value it makes as it goes (``execute_run`` its ``RunResult``
    turn by turn, the accumulator a case's statistics). Once a value is handed on it is not
    assigned to; who needs it changed builds a new one (``model_copy(update=...)``, e.g.
    ``farm.models.failure_class.classified``, the fleet's cost accounting, the workers' sweep id). Small
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
        object.__setattr__(self, "__pydantic_fields_set__", _shared_fields(self.__pydantic_fields_set__))

    @classmethod
    def checked(cls, **values: Any) -> Self:
        """The model of ``values`` checked already as validation would check them, built without
        validating them again: pydantic's ``model_construct``, lean (a million-case suite's loader
        builds a Case, a Turn and a Message per line; validating them again was a third of its
        time). Only for values of their fields' exact types, as ``cls(**values)`` would hold them
        (``farm.suites.jsonl`` checks them by hand first): the result equals ``cls(**values)``,
        fields set included (``tests/suites/test_suites_jsonl.py`` compares them)."""
        given = tuple(values)
        fields, factories, fields_set, extra = _RECIPES.get((cls, given)) or _recipe(cls, given)
        fields = fields.copy()
        fields.update(values)
        if factories:
            for name, factory in factories:
                fields[name] = factory()
        model = _new(cls)
        _set_dict(model, fields)
        _set_fields_set(model, fields_set)
        _set_extra(model, None if extra is None else {})
        _set_private(model, None)
        return model

    def copied(self, values: dict[str, Any]) -> Self:
        """This model with ``values`` (checked already, of fields it was given) in place of its
        own, built as ``checked`` builds: what ``checked`` would build from its values so changed.
        Its fields set is shared and no recipe is looked up (the key of ``checked``'s costs as much
        as the copy): a million listed cases are built from a few (``farm.suites.jsonl``)."""
        cls, fields_set = type(self), self.__pydantic_fields_set__
        factories = _FACTORY_FIELDS.get(cls)
        if factories is None:
            factories = _FACTORY_FIELDS[cls] = frozenset(n for n, i in cls.model_fields.items() if i.default_factory)
        if not values.keys() <= fields_set or not factories <= values.keys():  # else a value would be shared
            raise TypeError(f"{cls.__name__}.copied: {sorted(values)} are not among the fields it was given")
        fields = self.__dict__.copy()
        fields.update(values)
        model = _new(cls)
        _set_dict(model, fields)
        _set_fields_set(model, fields_set)
        _set_extra(model, None if self.__pydantic_extra__ is None else {})
        _set_private(model, None)
        return model


_FACTORY_FIELDS: dict[type, frozenset[str]] = {}
"""Each model's fields with a default factory (``copied`` must be given them)."""


def _shared_fields(fields: Iterable[str]) -> set[str]:
    """The one set of these field names every instance shares (``PerCaseModel``)."""
    key = frozenset(fields)
    shared = _SHARED_FIELD_SETS.get(key)
    if shared is None:
        if len(_SHARED_FIELD_SETS) >= _MAX_SHARED_FIELD_SETS:
            return set(key)
        shared = _SHARED_FIELD_SETS.setdefault(key, set(key))
    return shared


_Recipe = tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...], set[str], object]
_RECIPES: dict[tuple[type, tuple[str, ...]], _Recipe] = {}
_IMMUTABLE = (str, int, float, bool, type(None), tuple, frozenset)
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _recipe(cls: type[BaseModel], given: tuple[str, ...]) -> _Recipe:
    """How ``checked`` builds a ``cls`` from the fields ``given``: every field in order with its
    default (None where ``given`` or a factory fills it), the default factories of the fields not
    given, the shared fields set, and ``{}`` if ``cls`` allows extra fields."""
    found = _RECIPES.get((cls, given))
    if found is not None:
        return found
    fields = cls.model_fields
    missing = [name for name, info in fields.items() if info.is_required() and name not in given]
    if missing or not set(given) <= fields.keys():
        raise TypeError(f"{cls.__name__}.checked: missing {missing} or unknown fields in {list(given)}")
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, info in fields.items():
        defaults[name] = None if info.is_required() or info.default_factory is not None else info.default
        if info.default_factory is not None and name not in given:
            factories.append((name, cast(Callable[[], Any], info.default_factory)))
        elif not isinstance(defaults[name], _IMMUTABLE):
            raise TypeError(f"{cls.__name__}.{name}: a mutable default would be shared")
    extra: dict[str, Any] | None = {} if cls.model_config.get("extra") == "allow" else None
    if len(_RECIPES) >= _MAX_SHARED_FIELD_SETS:
        _RECIPES.clear()
    found = _RECIPES[(cls, given)] = (defaults, tuple(factories), _shared_fields(given), extra)
    return found


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
    judge_votes: list[str] | None = None
    """Judge checks under ``--confirm-failures k`` whose first verdict failed: the k verdicts asked,
    in order (the majority stands); None otherwise."""


class RunStatus(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
