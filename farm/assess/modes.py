"""Failures into failure modes: neuro-san's Assessor done better (SPEC 14.3).

For each case of a finished sweep:

1. every failed run becomes a ``Failure``: its deterministic class, what it had to do (the first
   failed check and its expectation, or "answer without error") and what it did (the value the
   check saw, or the error). Every kind of check counts, not only ``gist``;
2. failures are grouped by class, criteria and normalised sample: one group is one *distinct*
   failure, most frequent first;
3. without a judge a group's mode is its failure class. With one, each distinct failure is one
   judge call (temperature 0), shown the case's known modes as a numbered list; it answers an
   index or a new mode of at most two sentences. Known modes start from the case's memory, so
   re-assessing the same failures gives the same modes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from farm.assess.models import CaseAssessment, Failure, FailureMode
from farm.models import CaseStats, JsonValue, RunDetail, RunStatus
from farm.stats.outputs import normalise_output

__all__ = ["ASSESS_PROMPT", "ModeJudge", "assess_case", "failures_of", "read_answer"]

MAX_EXAMPLES = 5
"""Failures kept as examples per mode."""
MAX_MODE_CHARS = 300
ASSESS_PROMPT = (
    "You classify how a failed test run fails. You get the acceptance criteria the run had to meet, the "
    "text sample it produced, its failure class, and a numbered list of known failure modes (possibly empty). "
    "First decide for yourself why the sample fails the criteria. If one known failure mode matches that "
    "reason in spirit, answer with its number and nothing else. Otherwise answer with a new failure mode: a "
    "description of at most two sentences, general enough that later failures can be matched to it. Never "
    "add commentary."
)
_INDEX = re.compile(r"^\W*(?:mode\s*)?#?(\d+)\W*$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class ModeJudge(Protocol):
    """Names failure modes: one chat call at temperature 0 (see ``farm.assess.judge``)."""

    async def answer(self, messages: list[dict[str, Any]]) -> str:
        """The judge's raw answer; raises on a failed call."""
        ...


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else normalise_output(value)


def _failure(detail: RunDetail) -> Failure:
    failure_class = detail.failure_class or "assertion:unknown"
    if detail.failed_checks:
        check = detail.failed_checks[0]
        criteria = f"{check.name}: {_text(check.expected)}" if check.expected is not None else check.name
        sample = _text(check.actual) if check.actual is not None else check.message
    elif detail.error:
        criteria, sample = "the agent answers without error", detail.error
    else:
        criteria, sample = "the run passes", _text(detail.output)
    return Failure(run=detail.run, turn=detail.failed_turn, failure_class=failure_class, criteria=criteria,
                   sample=sample)


def failures_of(stats: CaseStats) -> list[Failure]:
    """The case's failed runs (failed, error, timeout) among its kept run details."""
    return [_failure(d) for d in stats.run_details if d.status not in (RunStatus.PASSED, RunStatus.SKIPPED)]


@dataclass
class _Group:
    failures: list[Failure] = field(default_factory=list)


def _groups(failures: Sequence[Failure]) -> list[_Group]:
    groups: dict[tuple[str, str, str], _Group] = {}
    for failure in failures:
        key = (failure.failure_class, failure.criteria, normalise_output(failure.sample))
        groups.setdefault(key, _Group()).failures.append(failure)
    return sorted(groups.values(), key=lambda g: (-len(g.failures), g.failures[0].run))


def assessment_messages(failure: Failure, modes: Sequence[str]) -> list[dict[str, Any]]:
    """The judge's conversation, in neuro-san's text layout plus the failure class."""
    known = "\n".join(f"{n}. {mode}" for n, mode in enumerate(modes, start=1)) or "(none yet)"
    user = (f'The acceptance_criteria is:\n"{failure.criteria}".\n\nThe text_sample is:\n"{failure.sample}".\n\n'
            f"The failure_class is: {failure.failure_class}\n\nThe known failure_modes are:\n{known}\n")
    return [{"role": "system", "content": ASSESS_PROMPT}, {"role": "user", "content": user}]


def read_answer(answer: str, modes: Sequence[str]) -> str | None:
    """The mode a judge's answer names: a known one by index or text, else the new one (None: empty)."""
    text = " ".join(str(answer).split()).strip("\"'` ")
    index = _INDEX.match(text)
    if index and 1 <= int(index.group(1)) <= len(modes):
        return modes[int(index.group(1)) - 1]
    if not text or index:
        return None
    text = " ".join(_SENTENCE_END.split(text)[:2])[:MAX_MODE_CHARS]
    return next((m for m in modes if m.casefold() == text.casefold()), text)


async def assess_case(stats: CaseStats, judge: ModeJudge | None, known: Sequence[str]) -> CaseAssessment:
    """Group the case's failures into modes (one judge call per distinct failure)."""
    failures = failures_of(stats)
    modes = list(known)
    members: dict[str, list[Failure]] = {}
    calls = 0
    for group in _groups(failures):
        mode = None
        if judge is not None:
            calls += 1
            mode = read_answer(await judge.answer(assessment_messages(group.failures[0], modes)), modes)
        mode = mode or group.failures[0].failure_class  # no judge, or nothing usable from it
        if mode not in modes:
            modes.append(mode)
        members.setdefault(mode, []).extend(group.failures)
    return CaseAssessment(id=stats.id, runs=stats.runs - stats.skipped, passed=stats.passed,
                          modes=_modes(members, len(failures), set(known)), judge_calls=calls)


def _modes(members: dict[str, list[Failure]], total: int, known: set[str]) -> list[FailureMode]:
    modes = [
        FailureMode(mode=mode, count=len(found), share=round(len(found) / total, 4),
                    failure_classes=sorted({f.failure_class for f in found}),
                    examples=sorted(found, key=lambda f: f.run)[:MAX_EXAMPLES], new=mode not in known)
        for mode, found in members.items()
    ]
    return sorted(modes, key=lambda m: (-m.count, m.examples[0].run))
