"""``farm judge-check --labels FILE.jsonl``: the sweep's judge held against human verdicts (SPEC 23).

Each line: ``{"case", "run" or "output", "criterion", "human": "pass"|"fail"}``. ``run`` names a
run of the report (its judged check's verdict is the judge's); ``output`` the output itself (every
stored run that gave it). ``criterion`` is the check's criterion as the suite writes it (an
``agent`` assertion's ``value``, a ``gist``'s text); it may be left out when the case has one judged
check. ``human`` says whether the output deserves to pass the *check* (for ``not_gist`` and negated
checks too). A label that names no stored output is exit 2 with its line, before any judge call.

Per criterion: TPR and TNR of the judge, and the sweep's raw pass rate of the check beside the
Rogan–Gladen corrected one (``farm.stats.judge_labels``). The raw rate counts the runs the report
keeps details of.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from farm.checks.judged import criterion_text
from farm.errors import InputError
from farm.judgecheck.items import TRUNCATED, wanted
from farm.models import CaseStats
from farm.stats.judge_labels import CorrectedPassRate, JudgeAccuracy, corrected_pass_rate, judge_accuracy
from farm.stats.outputs import normalise_output

Criterion = tuple[str, int, str, str]
"""(case, turn, check, criterion text), as ``JudgedOutput.criterion_key``."""


@dataclass(frozen=True)
class LabelledCriterion:
    key: Criterion
    accuracy: JudgeAccuracy
    pass_rate: CorrectedPassRate


@dataclass
class _Stored:
    """A report's judged checks: by (case, run) and by (case, output), each with its verdict."""

    by_run: dict[tuple[str, int], list[tuple[Criterion, bool]]]
    by_output: dict[tuple[str, str], list[tuple[Criterion, bool]]]
    totals: dict[Criterion, list[int]]
    """Per criterion: [passed, judged] over the stored runs."""


def _stored(results: Iterable[CaseStats]) -> _Stored:
    found = _Stored(defaultdict(list), defaultdict(list), defaultdict(lambda: [0, 0]))
    for stats in results:
        for detail in stats.run_details:
            for check in [*detail.failed_checks, *detail.judged_checks]:
                if wanted(check.name) is None or check.verdict in (None, "error"):
                    continue
                key = (stats.id, check.turn, check.name, _text(check.expected))
                found.by_run[(stats.id, detail.run)].append((key, check.passed))
                if not (isinstance(check.actual, str) and TRUNCATED.search(check.actual)):
                    found.by_output[(stats.id, _text(normalise_output(check.actual)))].append((key, check.passed))
                found.totals[key][0] += check.passed
                found.totals[key][1] += 1
    return found


def judge_against_labels(path: Path, shown: str, results: Iterable[CaseStats]) -> list[LabelledCriterion]:
    """Read ``path`` and hold each labelled criterion's judge against its labels.

    Raises:
        InputError: the file cannot be read, a line is not a label, or names no stored output.
    """
    stored = _stored(results)
    pairs: dict[Criterion, list[tuple[bool, bool]]] = defaultdict(list)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--labels {shown}: cannot read it: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"--labels {shown}:{number}"
        label = _label(line, where)
        human = label["human"] == "pass"
        for key, judged_pass in _matches(label, stored, where):
            pairs[key].append((human, judged_pass))
    found = []
    for key, labelled in pairs.items():
        accuracy = judge_accuracy(labelled)
        passed, judged = stored.totals[key]
        found.append(LabelledCriterion(key, accuracy, corrected_pass_rate(passed, judged, accuracy)))
    return found


def _label(line: str, where: str) -> dict[str, object]:
    try:
        label = json.loads(line)
    except ValueError as exc:
        raise InputError(f"{where}: not JSON: {exc}") from None
    if not isinstance(label, dict):
        raise InputError(f"{where}: expected an object {{\"case\", \"run\" or \"output\", \"criterion\", \"human\"}}")
    if not isinstance(label.get("case"), str):
        raise InputError(f"{where}: \"case\" must be a case id (a string)")
    if label.get("human") not in ("pass", "fail"):
        raise InputError(f"{where}: \"human\" must be \"pass\" or \"fail\", got {label.get('human')!r}")
    if ("run" in label) == ("output" in label):
        raise InputError(f"{where}: give \"run\" or \"output\" (one of them)")
    run = label.get("run")
    if "run" in label and (not isinstance(run, int) or isinstance(run, bool) or run < 1):
        raise InputError(f"{where}: \"run\" must be a run number (1, 2, …), got {run!r}")
    return label


def _matches(label: dict[str, object], stored: _Stored, where: str) -> list[tuple[Criterion, bool]]:
    case = str(label["case"])
    if "run" in label:
        found, named = stored.by_run.get((case, int(str(label["run"]))), []), f"run {label['run']}"
    else:
        found, named = stored.by_output.get((case, _text(normalise_output(label["output"]))), []), "that output"
    first: dict[Criterion, bool] = {}
    for key, passed in found:  # one verdict per check: an output's first (the cache gives it one)
        first.setdefault(key, passed)
    criterion = label.get("criterion")
    if criterion is not None:
        first = {key: passed for key, passed in first.items() if key[3] == _text(criterion)}
    elif len(first) > 1:
        raise InputError(f"{where}: case {case!r} has several judged checks: name the \"criterion\"")
    if not first:
        about = f" for criterion {_text(criterion)!r}" if criterion is not None else ""
        raise InputError(f"{where}: no stored judged output of case {case!r}, {named}{about} in the report")
    return list(first.items())


_text = criterion_text
