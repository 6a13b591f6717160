"""``farm judge-check``: how far a report's judges can be trusted, from their own repeats (SPEC 23).

``items`` finds the distinct judged outputs of a JSON report, ``run`` asks their judges again past
every cache, ``render`` writes the terminal table, JSON, Markdown and HTML.
"""

from __future__ import annotations

from farm.judgecheck.render import (
    render_judge_check_html,
    render_judge_check_json,
    render_judge_check_markdown,
    render_judge_check_text,
)
from farm.judgecheck.run import DEFAULT_REPEATS, JudgeCheck, JudgeCheckSettings, judge_check

__all__ = [
    "DEFAULT_REPEATS",
    "JudgeCheck",
    "JudgeCheckSettings",
    "judge_check",
    "render_judge_check_html",
    "render_judge_check_json",
    "render_judge_check_markdown",
    "render_judge_check_text",
]
