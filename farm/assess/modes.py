"""Failures into failure modes: neuro-san's Assessor done better (SPEC 14.3).

For each case of a finished sweep:

1. every failed run becomes a ``Failure``: its deterministic class, what it had to do (the first
   failed check and its expectation, or "answer without error") and what it did (the value the
   check saw, or the error). Every kind of check counts, not only ``gist``;
2. failures are grouped by class and tool-call path, then by the meaning of their samples
   (``farm.assess.clusters``; by distinct sample without the ``[semantic]`` extra), most frequent first;
3. without a judge a group's mode is its failure class (``<class> via <path>`` when the class's
   failures took different paths, ``…: <example>`` when it splits by meaning). With one, each
   group is one judge call (temperature 0), shown an example,
   the group's size and the case's known modes as a numbered list; it answers an index or a new
   mode of at most two sentences. Known modes start from the case's memory, so re-assessing the
   same failures gives the same modes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from farm.assess.clusters import failure_groups, known_mode
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
                   sample=sample, path=[c.name for c in detail.trajectory or ()])


def failures_of(stats: CaseStats) -> list[Failure]:
    """The case's failed runs (failed, error, timeout) among its kept run details."""
    return [_failure(d) for d in stats.run_details if d.status not in (RunStatus.PASSED, RunStatus.SKIPPED)]


def assessment_messages(failure: Failure, modes: Sequence[str], runs: int = 1) -> list[dict[str, Any]]:
    """The judge's conversation, in neuro-san's text layout plus the failure class and how many
    runs failed this way (the sample is one example of them)."""
    known = "\n".join(f"{n}. {mode}" for n, mode in enumerate(modes, start=1)) or "(none yet)"
    user = (f'The acceptance_criteria is:\n"{failure.criteria}".\n\nThe text_sample is:\n"{failure.sample}".\n\n'
            f"The failure_class is: {failure.failure_class}\n\n"
            f"Runs that failed this way (samples of the same meaning): {runs}\n\n"
            f"The known failure_modes are:\n{known}\n")
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
    for group in failure_groups(failures):
        mode = None
        if judge is not None:
            calls += 1
            messages = assessment_messages(group.failures[0], modes, len(group.failures))
            mode = read_answer(await judge.answer(messages), modes)
        mode = mode or known_mode(group, modes)  # no judge, or nothing usable from it
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
