"""Click pieces the farm's commands share: no "last one wins", rates as ``0.95`` or ``95%``.

``StrictCommand`` refuses a single-valued option given twice (``--runs 5 --runs 50`` is exit 2,
not a quiet 50: SPEC 10); options declared ``multiple=True`` (``-o``, ``-k``) and on/off flags
may repeat. Click's own parser counts the occurrences, so quoting, ``--opt=value`` and
``-ovalue`` forms are read exactly as the command itself will read them.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal, InvalidOperation
from typing import Any

import click


class StrictCommand(click.Command):
    """A click command on which a single-valued option may be given once only."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            counts = Counter(p for p in order if isinstance(p, click.Option) and _single_valued(p))
            for option, count in counts.items():
                if count > 1:
                    raise click.UsageError(f"{' / '.join(option.opts)} given {count} times: give it once", ctx)
        return super().parse_args(ctx, args)


def _single_valued(option: click.Option) -> bool:
    return not (option.multiple or option.count or option.is_flag)


class RateType(click.ParamType[float, Any]):
    """A rate between 0 and 1, written ``0.95`` or ``95%``."""

    name = "RATE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip()
        try:  # Decimal: 33.3% is 0.333, not 0.33299999999999996
            rate = float(Decimal(text[:-1]) / 100) if text.endswith("%") else float(Decimal(text))
        except (InvalidOperation, ValueError):
            self.fail(f"{value!r} is not a rate: write 0.95 or 95%", param, ctx)
        if not 0.0 <= rate <= 1.0:
            hint = f" (did you mean {text}%?)" if not text.endswith("%") and 1 < rate <= 100 else ""
            self.fail(f"{value!r} is outside 0–1 (0%–100%){hint}", param, ctx)
        return rate


RATE = RateType()

__all__ = ["RATE", "RateType", "StrictCommand"]
