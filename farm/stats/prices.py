"""What calls cost: a price table (USD per million tokens) and the cost of a usage (SPEC 13).

The bundled table (``farm/stats/prices.json``) holds providers' list prices on its ``as_of``
date; ``FARM_PRICES=FILE`` (or ``PriceTable.load(path)``) adds or replaces entries, in the same
shape: ``{"models": {"<model or connector id>": {"input", "output", "cached_input"?}}}``.
A price is looked up by connector id first, then by model name, each as written and without a
date or ``-latest`` suffix (``gpt-4o-2024-08-06`` → ``gpt-4o``). An unknown price is None, and
so is every cost computed from it: a report shows it as unknown, never as 0.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from farm.defaults import PRICES_ENV
from farm.errors import SettingsError
from farm.models.usage import Usage
from farm.yaofile import read_yao_object

PER_TOKENS = 1_000_000
_VERSION_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens; ``cached_input`` None: cached prompt tokens cost ``input``."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float | None:
        """USD for ``usage``; None when it has neither input nor output tokens."""
        if usage.input_tokens is None and usage.output_tokens is None:
            return None
        prompt = usage.input_tokens or 0
        cached = min(usage.cached_tokens or 0, prompt)
        cached_price = self.input if self.cached_input is None else self.cached_input
        dollars = (prompt - cached) * self.input + cached * cached_price + (usage.output_tokens or 0) * self.output
        return dollars / PER_TOKENS

    def most(self, tokens: int) -> float:
        """The most ``tokens`` tokens can cost (each at the dearer of input and output): a budget
        reservation, which cannot know the split before the call."""
        return tokens * max(self.input, self.output) / PER_TOKENS


class PriceTable:
    """Prices by model or connector id."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})

    @classmethod
    def bundled(cls) -> PriceTable:
        text = resources.files("farm.stats").joinpath("prices.json").read_text(encoding="utf-8")
        return cls(_prices(json.loads(text), "farm/stats/prices.json"))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PriceTable:
        """The bundled table, with ``FARM_PRICES``'s file over it when set."""
        table = cls.bundled()
        path = (os.environ if env is None else env).get(PRICES_ENV)
        return table.updated(cls.load(Path(path))) if path else table

    @classmethod
    def load(cls, path: Path) -> PriceTable:
        """A price file (JSON, comments allowed); SettingsError naming the file and key."""
        return cls(_prices(read_yao_object(path, "price file", SettingsError), str(path)))

    def updated(self, other: PriceTable) -> PriceTable:
        return PriceTable({**self.prices, **other.prices})

    def price(self, *names: str | None) -> Price | None:
        """The first of ``names`` (connector id, model) with a price, as written or unversioned."""
        for name in names:
            if not name:
                continue
            found = self.prices.get(name) or self.prices.get(_VERSION_SUFFIX.sub("", name))
            if found is not None:
                return found
        return None


def _prices(data: Any, where: str) -> dict[str, Price]:
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise SettingsError(f"{where}: models: expected an object of model → {{input, output}}")
    return {str(name): _price(entry, f"{where}: models.{name}") for name, entry in models.items()}


def _price(entry: Any, where: str) -> Price:
    if not isinstance(entry, dict):
        raise SettingsError(f"{where}: expected {{\"input\": USD, \"output\": USD}} per million tokens")
    unknown = set(entry) - {"input", "output", "cached_input"}
    if unknown:
        raise SettingsError(f"{where}: unknown key {sorted(unknown)[0]!r} (known: input, output, cached_input)")
    values = {}
    for key in ("input", "output", "cached_input"):
        value = entry.get(key)
        if value is None and key == "cached_input":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise SettingsError(f"{where}.{key}: expected a number of USD per million tokens ≥ 0, got {value!r}")
        values[key] = float(value)
    return Price(**values)


def call_cost(usage: Usage | None, price: Price | None, reported: float | None = None) -> float | None:
    """A call's cost: from the price table when the price is known, else what the agent reported,
    else None (unknown)."""
    if price is not None and usage is not None:
        return price.cost(usage)
    return reported


def cost_per_passing_run(cost_usd: float | None, passed_runs: int) -> float | None:
    """Total cost over passing runs (SPEC 13); None when the cost is unknown or nothing passed."""
    if cost_usd is None or passed_runs <= 0:
        return None
    return cost_usd / passed_runs
