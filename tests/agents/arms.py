"""Simulated matrix arms (issue 41): agents that answer ``yes`` with a known probability.

Each answer is drawn from a generator seeded by (case, run), so a sweep's verdicts are the same
every time; the probability is the function's (``p95``, ``p70``, ``p20``) or the arm's option
``p`` (``by_option``: a ``--matrix`` arm's ``options = { p = 0.3 }``). Every call reports 10 input
and 5 output tokens and a cost of $0.001 × ``cost`` (an option too, default 1), and, when
``MATRIX_CALL_LOG`` names a file, appends ``case run`` to it: the order the runs were made in.
"""

from __future__ import annotations

import os
import random
from typing import Any

from farm.models import Reply


def _answer(context: Any, p: float) -> Reply:
    log = os.environ.get("MATRIX_CALL_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{context.case_id} {context.run}\n")
    options = context.options or {}
    drawn = random.Random(f"{context.case_id}:{context.run}").random()
    cost = 0.001 * float(options.get("cost", 1))
    return Reply(text="yes" if drawn < p else "no",
                 usage={"input_tokens": 10, "output_tokens": 5, "cost_usd": cost})


def p95(messages: Any, context: Any) -> Reply:
    return _answer(context, 0.95)


def p70(messages: Any, context: Any) -> Reply:
    return _answer(context, 0.70)


def p20(messages: Any, context: Any) -> Reply:
    return _answer(context, 0.20)


def by_option(messages: Any, context: Any) -> Reply:
    return _answer(context, float((context.options or {}).get("p", 0.5)))
