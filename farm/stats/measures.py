"""Small pure measures: Wilson interval, stability class, label, rounding."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from farm.models import StabilityClass

WILSON_Z = 1.959964
"""z for a two-sided 95 % interval."""

Label = Literal["stable", "flaky", "broken", "skipped"]


def wilson_interval(successes: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """Wilson score interval of ``successes / n`` as fractions in 0..1.

    With ``n == 0`` nothing is known, so the interval is the whole range ``(0.0, 1.0)``.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 ≤ successes ≤ n, got {successes}/{n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return (max(0.0, centre - margin), min(1.0, centre + margin))


def wilson_percent(successes: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson interval in percent, one decimal, rounded outward so it never claims more
    than it knows (``pass_rate_ci``, checkpoint reach rates)."""
    low, high = wilson_interval(successes, n)
    return (floor_to(low * 100, 1), ceil_to(high * 100, 1))


def stability_class(pass_rate: float | Fraction) -> StabilityClass:
    """The Yao table: 100 stable, ≥ 80 mostly stable, ≥ 50 unstable, above 0 highly unstable;
    0 is ``broken``: a case that always fails is consistent, not random (SPEC 7).

    Give the exact rate (a ``Fraction``) where you have it: 99.96 % is not stable.
    """
    if pass_rate <= 0:
        return StabilityClass.BROKEN
    if pass_rate >= 100:
        return StabilityClass.STABLE
    if pass_rate >= 80:
        return StabilityClass.MOSTLY_STABLE
    if pass_rate >= 50:
        return StabilityClass.UNSTABLE
    return StabilityClass.HIGHLY_UNSTABLE


def label_for(passed: int, counted: int) -> Label:
    """``skipped`` (no counted run), ``stable`` (all passed), ``broken`` (none), else ``flaky``."""
    if counted == 0:
        return "skipped"
    if passed == counted:
        return "stable"
    if passed == 0:
        return "broken"
    return "flaky"


def _ratio(value: Fraction | int | float) -> tuple[int, int]:
    """``value`` exactly as numerator and (positive) denominator: no ``Fraction`` is built (a case's
    statistics round a dozen figures; the ``Fraction`` arithmetic was most of their cost)."""
    if isinstance(value, int):
        return value, 1
    if isinstance(value, float):
        return value.as_integer_ratio()
    return value.numerator, value.denominator


def round_ratio_half_up(numerator: int, denominator: int, digits: int) -> float:
    """``numerator / denominator`` (denominator > 0) rounded half-up to ``digits`` decimals, exactly:
    floor(x · 10^d + 1/2) in integers."""
    scale: int = 10**digits
    return ((2 * numerator * scale + denominator) // (2 * denominator)) / scale


def floor_to(value: Fraction | int | float, digits: int) -> float:
    """``value`` (a float taken at its exact binary value) rounded down to ``digits`` decimals, exactly."""
    numerator, denominator = _ratio(value)
    scale: int = 10**digits
    return ((numerator * scale) // denominator) / scale


def ceil_to(value: Fraction | int | float, digits: int) -> float:
    """``value`` (a float taken at its exact binary value) rounded up to ``digits`` decimals, exactly."""
    numerator, denominator = _ratio(value)
    scale: int = 10**digits
    return (-((-numerator * scale) // denominator)) / scale


def percent(part: int, whole: int) -> float:
    """``part / whole`` in percent, one decimal; 0.0 when ``whole`` is 0.

    Rounding never reaches an end it is not at: 9,999 of 10,000 is 99.9, not 100.0.
    """
    if whole == 0:
        return 0.0
    value = round_ratio_half_up(100 * part, whole, 1)
    if value == 100 and part != whole:
        return 99.9
    if value == 0 and part != 0:
        return 0.1
    return value
