"""Token usage as the farm reports it (SPEC 13), read from whatever an agent or provider said.

``Usage`` has ``input_tokens`` (all prompt tokens, cached ones included), ``output_tokens`` (all
completion tokens, reasoning included), and the two subsets ``cached_tokens`` and
``reasoning_tokens``; a field nobody reported is absent, never 0. ``parse_usage`` reads:

- OpenAI chat completions: ``prompt_tokens``, ``completion_tokens``,
  ``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``;
- OpenAI responses: ``input_tokens``, ``output_tokens``, ``input_tokens_details.cached_tokens``,
  ``output_tokens_details.reasoning_tokens``;
- Anthropic: ``input_tokens`` (without cache), ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``, ``output_tokens``;
- neuro-san's token accounting (``prompt_tokens``, ``completion_tokens``, ``total_cost``) and
  the farm's own form (so parsing is idempotent).

A reported cost (``cost``, ``total_cost``, ``cost_usd``) is read apart by ``reported_cost``.
``RunUsage`` collects one run's turns (``farm.run.execute``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from farm.models import RunResult

FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


def usage_counts(usage: Mapping[str, Any] | None) -> dict[str, int] | None:
    """The integer token counts of a reply's usage (cost and other figures left out)."""
    if not usage:
        return None
    counts = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    return counts or None


@dataclass(frozen=True)
class Usage:
    """Tokens of one call, turn, run or total; None: not reported."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def known(self) -> bool:
        return any(getattr(self, name) is not None for name in FIELDS)

    @property
    def total_tokens(self) -> int | None:
        """Input plus output (what providers' token limits count); None when neither is known."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        """Field by field; a field known on either side is known in the sum."""
        def plus(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(**{f.name: plus(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)})

    def to_dict(self) -> dict[str, int]:
        """The known fields only (SPEC 13: absent when unknown)."""
        return {name: value for name in FIELDS if (value := getattr(self, name)) is not None}


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value < 0 or value != value or (isinstance(value, float) and not value.is_integer()):
        return None
    return int(value)


def _nested(raw: Mapping[str, Any], outer: str, inner: str) -> int | None:
    details = raw.get(outer)
    return _count(details.get(inner)) if isinstance(details, Mapping) else None


def _first(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)


def parse_usage(raw: Any) -> Usage | None:
    """The usage in a provider's or agent's ``usage`` object; None when it holds no token count."""
    if not isinstance(raw, Mapping):
        return None
    cache_read = _count(raw.get("cache_read_input_tokens"))
    cache_write = _count(raw.get("cache_creation_input_tokens"))
    input_tokens = _first(_count(raw.get("input_tokens")), _count(raw.get("prompt_tokens")))
    if input_tokens is not None and (cache_read is not None or cache_write is not None):
        input_tokens += (cache_read or 0) + (cache_write or 0)  # Anthropic counts cache apart
    usage = Usage(
        input_tokens=input_tokens,
        output_tokens=_first(_count(raw.get("output_tokens")), _count(raw.get("completion_tokens"))),
        cached_tokens=_first(_count(raw.get("cached_tokens")), _nested(raw, "prompt_tokens_details", "cached_tokens"),
                             _nested(raw, "input_tokens_details", "cached_tokens"), cache_read),
        reasoning_tokens=_first(_count(raw.get("reasoning_tokens")),
                                _nested(raw, "completion_tokens_details", "reasoning_tokens"),
                                _nested(raw, "output_tokens_details", "reasoning_tokens")),
    )
    return usage if usage.known else None


def reported_cost(raw: Any) -> float | None:
    """A cost in USD the agent reported itself (``cost_usd``, ``cost``, neuro-san's ``total_cost``).

    A reported 0 for a call that used tokens is read as unknown: neuro-san (LangChain's callback)
    reports 0 for a model it has no price for.
    """
    if not isinstance(raw, Mapping):
        return None
    for name in ("cost_usd", "cost", "total_cost"):
        value = raw.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            usage = parse_usage(raw)
            if value == 0 and usage is not None and usage.total_tokens:
                return None
            return float(value)
    return None


@dataclass
class UsageTotals:
    """Usage and cost summed over calls, turns, runs or cases (incremental: nothing is kept per part).

    The cost is unknown (None) as soon as one part's is: a partial sum would read as the whole.
    """

    usage: Usage = Usage()
    cost_usd: float | None = 0.0
    parts: int = 0

    def add(self, usage: Usage | None, cost_usd: float | None) -> None:
        self.parts += 1
        if usage is not None:
            self.usage = self.usage + usage
        self.cost_usd = None if cost_usd is None or self.cost_usd is None else self.cost_usd + cost_usd

    def merge(self, other: UsageTotals) -> None:
        if other.parts == 0:
            return
        self.parts += other.parts
        self.usage = self.usage + other.usage
        self.cost_usd = None if other.cost_usd is None or self.cost_usd is None else self.cost_usd + other.cost_usd

    def to_dict(self) -> dict[str, Any]:
        """``{"usage": {...known fields}, "cost_usd": USD or None}`` (None too when nothing was added)."""
        return {"usage": self.usage.to_dict(), "cost_usd": self.cost_usd if self.parts else None}


class RunUsage:
    """One run's usage as its turns answer: per turn and summed, with the cost the agent reported."""

    __slots__ = ("totals", "turns")

    def __init__(self) -> None:
        self.turns: list[Usage | None] = []
        self.totals = UsageTotals()

    def add(self, raw: Any) -> None:
        """An answered turn's ``Reply.usage`` (any provider's shape, or None)."""
        usage = parse_usage(raw)
        self.turns.append(usage)
        self.totals.add(usage, reported_cost(raw))

    def fill(self, result: RunResult) -> None:
        """``usage``, ``turn_usage`` and the reported ``cost_usd`` of ``result`` (the executor
        replaces the cost by the price table's when the agent has a price)."""
        if not self.turns:
            return
        if any(usage is not None for usage in self.turns):
            result.usage = self.totals.usage.to_dict()
            result.turn_usage = [usage.to_dict() if usage is not None else {} for usage in self.turns]
        result.cost_usd = self.totals.cost_usd
