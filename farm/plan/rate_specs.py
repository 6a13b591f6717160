"""Rate-limit specs (SPEC 13): the ``--rate-limit`` flag and the ``rate_limit`` of ``.yao`` files.

Grammar: ``KEY=SPEC[,SPEC…]`` on the command line, the bare ``SPEC[,SPEC…]`` in a
``package.yao`` (KEY: the agent id) or ``*.conn.yao`` (KEY: the connector name). SPEC is one of

    N/s, N/m      requests per second / per minute
    Ntok/m        tokens per minute (input + output)
    Nconc         calls in flight

N is a positive number (``0.5/s`` is one request every two seconds). KEY is an agent id, a
connector or judge name, matched exactly, or ``*`` for every key with no limit of its own.
Which limit a key gets (``LimitTable.for_key``): the command line's own entry for the key, each
dimension it states winning over the key's declaration in its ``.yao`` file; then the ``*``
entry. Pure: no I/O beyond the caller handing in what a file said.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace

from farm.errors import SettingsError

WILDCARD = "*"
FLAG = "--rate-limit"
_SPEC = re.compile(r"(?P<n>\d+(?:\.\d+)?|\.\d+)(?P<unit>/s|/m|tok/m|conc)")


@dataclass(frozen=True)
class RateLimit:
    """One key's limits; None means "no limit on this dimension"."""

    requests_per_s: float | None = None
    tokens_per_s: float | None = None
    concurrency: int | None = None

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    def over(self, base: RateLimit) -> RateLimit:
        """This limit's dimensions, and ``base``'s where this one states none."""
        stated = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        return replace(base, **stated)

    def describe(self) -> str:
        """The limit in the spec grammar (``600/m,200000tok/m,8conc``), for messages and reports."""
        parts = []
        if self.requests_per_s is not None:
            per_minute = round(self.requests_per_s * 60, 6)
            parts.append(f"{_number(per_minute)}/m" if per_minute.is_integer() else f"{_number(self.requests_per_s)}/s")
        if self.tokens_per_s is not None:
            parts.append(f"{_number(round(self.tokens_per_s * 60, 6))}tok/m")
        if self.concurrency is not None:
            parts.append(f"{self.concurrency}conc")
        return ",".join(parts) or "unlimited"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def parse_limit(text: str, *, where: str) -> RateLimit:
    """``SPEC[,SPEC…]`` as a RateLimit.

    Raises:
        SettingsError: naming ``where`` (the flag, or the file and key) and what is wrong.
    """
    if not isinstance(text, str) or not text.strip():
        raise SettingsError(f"{where}: expected SPEC[,SPEC…] (N/s, N/m, Ntok/m, Nconc), got {text!r}")
    values: dict[str, float | int] = {}
    for part in (p.strip() for p in text.split(",")):
        name, value = _parse_one(part, where)
        if name in values:
            raise SettingsError(f"{where}: {part!r}: {_DIMENSIONS[name]} given twice")
        values[name] = value
    return RateLimit(**values)  # type: ignore[arg-type]


_DIMENSIONS = {"requests_per_s": "a request rate", "tokens_per_s": "a token rate", "concurrency": "a concurrency cap"}


def _parse_one(part: str, where: str) -> tuple[str, float | int]:
    match = _SPEC.fullmatch(part.replace(" ", ""))
    if match is None:
        raise SettingsError(f"{where}: {part!r} is not a limit: expected N/s, N/m, Ntok/m or Nconc")
    number, unit = float(match["n"]), match["unit"]
    if not math.isfinite(number) or number <= 0:
        raise SettingsError(f"{where}: {part!r}: the number must be greater than 0")
    if unit == "conc":
        if not number.is_integer():
            raise SettingsError(f"{where}: {part!r}: a concurrency cap is a whole number of calls")
        return "concurrency", int(number)
    if unit == "tok/m":
        return "tokens_per_s", number / 60
    return "requests_per_s", number if unit == "/s" else number / 60


def parse_flag(values: Iterable[str]) -> dict[str, RateLimit]:
    """Every ``--rate-limit KEY=SPEC[,SPEC…]`` given (repeatable, one key each) as key → limit.

    Raises:
        SettingsError: a value without ``KEY=``, a bad spec, or the same key given twice.
    """
    limits: dict[str, RateLimit] = {}
    for value in values:
        key, sep, spec = value.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingsError(f"{FLAG} {value!r}: expected KEY=SPEC[,SPEC…] (e.g. openai.gpt-4o=600/m,8conc)")
        if key in limits:
            raise SettingsError(f"{FLAG}: key {key!r} given twice")
        limits[key] = parse_limit(spec, where=f"{FLAG} {key}")
    return limits


def declared_limit(data: Mapping[str, object], *, where: str) -> RateLimit | None:
    """The ``rate_limit`` of a parsed ``package.yao`` / ``*.conn.yao`` object, if it has one.

    ``where`` names the file; errors name its ``rate_limit`` key.
    """
    value = data.get("rate_limit")
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{where}: rate_limit: expected a string such as \"600/m,8conc\", got {value!r}")
    return parse_limit(value, where=f"{where}: rate_limit")


class LimitTable:
    """Which limit applies to which key: command line over declarations, then ``*``."""

    def __init__(self, flag: Mapping[str, RateLimit] | None = None,
                 declared: Mapping[str, RateLimit] | None = None) -> None:
        self.flag = dict(flag or {})
        self.declared = dict(declared or {})

    def declare(self, key: str, limit: RateLimit | None) -> None:
        """Record what a key's ``.yao`` file says (called as agents and connectors are loaded)."""
        if limit is not None and not limit.empty:
            self.declared[key] = limit

    def for_key(self, key: str) -> RateLimit:
        """The limit of ``key``: the flag's dimensions over the declaration; else ``*``; else none."""
        flag, declared = self.flag.get(key), self.declared.get(key)
        if flag is not None and declared is not None:
            return flag.over(declared)
        found = flag or declared or self.flag.get(WILDCARD)
        return found if found is not None else RateLimit()


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.*-]{1,100}")


def fleet_name(limit_key: str) -> str:
    """A rate-limit key as it is written down (Redis keys, record/replay files): itself when a plain
    name (``openai.gpt-4o``), else ``sha256:`` and a digest, so no URL, credential or odd byte shows."""
    if _PLAIN_NAME.fullmatch(limit_key):
        return limit_key
    return "sha256:" + hashlib.sha256(limit_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
