"""``farm judge-check``'s outputs: the terminal table, JSON (``-o FILE.json``) and Markdown (``.md``).

Shares are fractions 0..1 in JSON (``judge_flip_rate`` and its interval, ``judge_alone_share``),
percentages on the terminal and in Markdown.
"""

from __future__ import annotations

import json
from typing import Any

from farm.judgecheck.labels import LabelledCriterion
from farm.judgecheck.run import JudgeCheck
from farm.stats.judge_trust import NOISY_FLIP_RATE

MAX_CRITERION = 48
"""Characters of a criterion shown in a table."""


def judge_check_document(found: JudgeCheck) -> dict[str, Any]:
    """The JSON document: settings, per criterion the flip rate, per case the judge-alone share."""
    return {
        "report": found.source, "sweep_id": found.sweep_id, "repeats": found.repeats, "sample": found.sample,
        "calls": found.calls, "errors": found.errors, "truncated_outputs": found.truncated,
        "noisy_above": NOISY_FLIP_RATE, "notes": found.notes,
        "criteria": [{"case": c.case_id, "criterion_id": c.criterion_id, "turn": c.turn, "check": c.check,
                      "criterion": c.criterion,
                      "judge": c.judge, "outputs": c.flips.outputs, "flipped": c.flips.flipped,
                      "judge_flip_rate": c.flips.judge_flip_rate,
                      "judge_flip_rate_ci": list(c.flips.judge_flip_rate_ci), "judge_noisy": c.flips.judge_noisy}
                     for c in found.criteria],
        "cases": [{"id": case_id, "failures": a.failures, "judge_alone": a.explained, "judge_alone_share": a.share}
                  for case_id, a in found.cases.items()],
        **({} if found.labels is None else {"labels": [_labelled(c) for c in found.labels]}),
    }


def _labelled(c: LabelledCriterion) -> dict[str, Any]:
    a, rate = c.accuracy, c.pass_rate
    corrected_ci = rate.corrected_pass_rate_ci
    return {"case": c.key[0], "turn": c.key[1], "check": c.key[2], "criterion": c.key[3],
            "human_passed": a.human_passed, "human_failed": a.human_failed,
            "tpr": a.tpr, "tpr_ci": list(a.tpr_ci), "tnr": a.tnr, "tnr_ci": list(a.tnr_ci),
            "raw_pass_rate": rate.raw_pass_rate, "raw_pass_rate_ci": list(rate.raw_pass_rate_ci),
            "corrected_pass_rate": rate.corrected_pass_rate,
            "corrected_pass_rate_ci": None if corrected_ci is None else list(corrected_ci),
            "refused": rate.refused or None}


def render_judge_check_json(found: JudgeCheck) -> str:
    return json.dumps(judge_check_document(found), indent=2, ensure_ascii=False) + "\n"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CRITERION else text[: MAX_CRITERION - 1] + "…"


def _rows(found: JudgeCheck) -> tuple[list[list[str]], list[list[str]]]:
    criteria = [[c.case_id, str(c.turn), c.check, _short(c.criterion), str(c.flips.outputs), str(c.flips.flipped),
                 _pct(c.flips.judge_flip_rate),
                 f"{_pct(c.flips.judge_flip_rate_ci[0])}–{_pct(c.flips.judge_flip_rate_ci[1])}",
                 "NOISY" if c.flips.judge_noisy else ""] for c in found.criteria]
    cases = [[case_id, str(a.failures), str(a.explained), _pct(a.share)] for case_id, a in found.cases.items()]
    return criteria, cases


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"{_pct(ci[0])}–{_pct(ci[1])}"


def _label_rows(found: JudgeCheck) -> list[list[str]]:
    return [[c.key[0], _short(c.key[3]), f"{c.accuracy.human_passed}/{c.accuracy.human_failed}",
             f"{_pct(c.accuracy.tpr)} ({_ci(c.accuracy.tpr_ci)})", f"{_pct(c.accuracy.tnr)} ({_ci(c.accuracy.tnr_ci)})",
             f"{_pct(c.pass_rate.raw_pass_rate)} ({_ci(c.pass_rate.raw_pass_rate_ci)})",
             (c.pass_rate.refused and f"none: {c.pass_rate.refused}")
             or f"{_pct(c.pass_rate.corrected_pass_rate)} ({_ci(c.pass_rate.corrected_pass_rate_ci)})"]
            for c in found.labels or []]


LABELS_HEAD = ["case", "criterion", "human pass/fail", "TPR (95% CI)", "TNR (95% CI)", "raw pass rate",
               "corrected pass rate"]
LABELS_TITLE = "the judge against human labels (pass rate corrected for its errors, Rogan–Gladen):"


CRITERIA_HEAD = ["case", "turn", "check", "criterion", "outputs", "flipped", "flip rate", "95% CI", "noisy"]
CASES_HEAD = ["case", "failures", "judge alone", "share"]


def _table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "".join("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in [head, *rows])


def _headline(found: JudgeCheck) -> str:
    noisy = sum(c.flips.judge_noisy for c in found.criteria)
    return (f"judge-check of {found.source}: {found.repeats} verdicts per output, "
            f"{sum(c.flips.outputs for c in found.criteria)} outputs, {found.calls} judge calls"
            f"{f' ({found.errors} failed)' if found.errors else ''}; "
            f"{noisy} of {len(found.criteria)} criteria judge-noisy (flip rate above {NOISY_FLIP_RATE:.0%} "
            "with 95% confidence)\n")


def render_judge_check_text(found: JudgeCheck) -> str:
    criteria, cases = _rows(found)
    text = _headline(found) + "criteria:\n" + _table(CRITERIA_HEAD, criteria)
    text += "failures the judge alone explains (failed once, passed by the majority of fresh verdicts):\n"
    text += _table(CASES_HEAD, cases)
    if found.labels is not None:
        text += LABELS_TITLE + "\n" + _table(LABELS_HEAD, _label_rows(found))
    if found.truncated:
        text += f"{found.truncated} judged output(s) cut short in the report: not judged again\n"
    return text + "".join(f"note: {note}\n" for note in found.notes)


def render_judge_check_markdown(found: JudgeCheck) -> str:
    criteria, cases = _rows(found)

    def table(head: list[str], rows: list[list[str]]) -> str:
        lines = [head, ["---"] * len(head), *rows]
        return "".join("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |\n" for row in lines)

    text = "# Judge check\n\n" + _headline(found) + "\n## Criteria\n\n" + table(CRITERIA_HEAD, criteria)
    text += "\n## Failures the judge alone explains\n\n" + table(CASES_HEAD, cases)
    if found.labels is not None:
        text += "\n## The judge against human labels\n\n" + table(LABELS_HEAD, _label_rows(found))
    return text + "".join(f"\n- {note}" for note in found.notes) + ("\n" if found.notes else "")


def render_judge_check_html(found: JudgeCheck) -> str:
    """One self-contained page, no script (autoescaped Jinja, the sweep report's stylesheet)."""
    from markupsafe import Markup

    from farm.reports.html_kit import asset, template_environment

    criteria, cases = _rows(found)
    sections = [{"id": "criteria", "title": "Criteria", "head": CRITERIA_HEAD, "rows": criteria,
                 "hint": f"{found.repeats} fresh verdicts per distinct output, past the judge cache"},
                {"id": "judge-alone", "title": "Failures the judge alone explains", "head": CASES_HEAD, "rows": cases,
                 "hint": "failed once, passed by the majority of the fresh verdicts"}]
    if found.labels is not None:
        sections.append({"id": "labels", "title": "The judge against human labels", "head": LABELS_HEAD,
                         "rows": _label_rows(found), "hint": "the pass rate corrected for its errors (Rogan–Gladen)"})
    noisy = sum(c.flips.judge_noisy for c in found.criteria)
    return template_environment().get_template("judge_check.html.j2").render(
        title="Judge check · agent-farm", verdict=f"{noisy} judge-noisy" if noisy else "no judge-noisy criterion",
        tone="bad" if noisy else "muted", headline=_headline(found).strip(), sections=sections, notes=found.notes,
        css=Markup(asset("report.css")))
