"""Judge checks (``agent``, ``gist``/``not_gist``): ask a ``Judge`` and read its answer strictly.

``parse_verdict`` is the one place a judge's raw text becomes a verdict (SPEC 4.2):

- JSON ``{"passed": true|false, "reason": "..."}`` (optionally in a ```json fence) → pass/fail;
  JSON without a boolean ``passed`` → equivocal.
- Otherwise the answer's *first word*, after optional markup and an optional label
  (``Verdict:``, ``Answer:``, ``Result:``), must be the whole word ``pass`` or ``fail`` (any
  case); the rest is the reason. So ``PASS``, ``pass.``, ``Verdict: fail - too vague`` are
  verdicts, while ``passed``, ``failing``, ``This does not pass`` and ``I can't say`` are
  equivocal: only the two words the judge was told to use count, and only up front, so a
  negation later in a sentence can never flip the result.

An equivocal answer fails the check, whatever the check's polarity.

``ask_confirmed`` is ``--confirm-failures k``: a first verdict that fails the check (a wrong
``pass``/``fail`` or an equivocation; not an error, which is no verdict of the judge) is asked
k − 1 more times, past the judge cache, and the majority of the k verdicts stands.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from farm.checks.base import JUDGE_REPEAT, CheckContext, JudgeVerdict
from farm.checks.extract import parse_json_text, safe_repr

__all__ = ["JudgeCall", "ask_confirmed", "ask_judge", "criterion_text", "parse_verdict"]

_LEAD = re.compile(
    r"^[\W_]*(?:(?:final\s+)?(?:verdict|answer|result|decision)\s*[:=\-–]\s*)?[\W_]*(pass|fail)\b(.*)$",
    re.IGNORECASE | re.DOTALL,
)
_FENCED = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n(.*?)\n?```$", re.DOTALL | re.IGNORECASE)

NO_JUDGE = "no judge is configured: pass --judge CONNECTOR (or set one in the farm config)"


def parse_verdict(text: Any) -> JudgeVerdict:
    """Turn a judge's raw answer into a verdict (rules in the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        return JudgeVerdict("equivocal", "the judge gave an empty answer")
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if body.startswith("{"):
        return _json_verdict(body, text)
    match = _LEAD.match(body)
    if match is None:
        return JudgeVerdict("equivocal", f"the judge did not answer pass or fail: {safe_repr(text)}")
    word, rest = match.group(1).lower(), match.group(2)
    return JudgeVerdict("pass" if word == "pass" else "fail", rest.lstrip(" \t\n.:;,-–—*_\"'").rstrip())


def _json_verdict(body: str, raw: str) -> JudgeVerdict:
    ok, data = parse_json_text(body)
    if not ok or not isinstance(data, dict):
        return JudgeVerdict("equivocal", f"the judge answered malformed JSON: {safe_repr(raw)}")
    passed = data.get("passed")
    if not isinstance(passed, bool):
        return JudgeVerdict("equivocal", f"the judge's JSON has no boolean 'passed': {safe_repr(raw)}")
    reason = data.get("reason", "")
    return JudgeVerdict("pass" if passed else "fail", reason if isinstance(reason, str) else str(reason))


def criterion_text(value: Any) -> str:
    """A criterion as the judge reads it: strings as written, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True)
class JudgeCall:
    """The result of asking a judge: a verdict, or why no verdict could be had."""

    verdict: JudgeVerdict | None
    error: str = ""
    votes: list[str] | None = None
    """``--confirm-failures``: every verdict asked, in order (the first one first); None when the
    first verdict stood unconfirmed."""


async def ask_judge(ctx: CheckContext, use: str | None, criterion: Any, actual: Any) -> JudgeCall:
    """Resolve the judge named ``use`` (None: the default) and ask it; never raises."""
    if ctx.judges is None:
        return JudgeCall(None, NO_JUDGE)
    try:
        judge = ctx.judges(use)
    except Exception as exc:
        name = use or "default judge"
        return JudgeCall(None, f"cannot get judge {name!r}: {type(exc).__name__}: {exc}")
    try:
        verdict = await judge.judge(criterion=criterion_text(criterion), actual=actual, input=ctx.input)
    except Exception as exc:
        return JudgeCall(None, f"judge failed: {type(exc).__name__}: {exc}")
    if not isinstance(verdict, JudgeVerdict):  # a judge returning raw text still gets strict parsing
        verdict = parse_verdict(verdict)
    return JudgeCall(verdict)


async def ask_confirmed(ctx: CheckContext, use: str | None, criterion: Any, actual: Any, want: str) -> JudgeCall:
    """``ask_judge``, then, when the verdict is not ``want`` and ``ctx.confirm_failures`` k > 1, k − 1
    repeats (never answered by the judge cache: ``JUDGE_REPEAT``); a verdict of the majority
    wins, else the first verdict stands. A failed call is an ``error`` vote."""
    first = await ask_judge(ctx, use, criterion, actual)
    k = ctx.confirm_failures
    if k <= 1 or first.verdict is None or first.verdict.verdict in (want, "error"):
        return first
    verdicts = [first.verdict]
    for repeat in range(1, k):
        token = JUDGE_REPEAT.set(repeat)
        try:
            again = await ask_judge(ctx, use, criterion, actual)
        finally:
            JUDGE_REPEAT.reset(token)
        verdicts.append(again.verdict or JudgeVerdict("error", again.error))
    votes: list[str] = [v.verdict for v in verdicts]
    wanted = [v for v in verdicts if v.verdict == want]
    return JudgeCall(wanted[0] if 2 * len(wanted) > k else first.verdict, votes=votes)
