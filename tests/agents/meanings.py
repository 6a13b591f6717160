"""Agents whose answers differ in wording or in meaning (the semantic figures' tests, SPEC 16)."""

from __future__ import annotations

from typing import Any

PARAPHRASES = ["Paris is the capital of France.", "The capital of France is Paris.",
               "France's capital city is Paris.", "Paris serves as the capital of France."]
UNRELATED = ["Paris is the capital of France.", "Water boils at 100 degrees Celsius at sea level.",
             "The stock market fell sharply today.", "I like playing football on weekends."]
REFUSALS = ["I'm sorry, but I can't help with that.", "Sorry, I am unable to assist with this request.",
            "I cannot help you with this."]
ISSUE_46_REFUSALS = ["Sorry, I can't assist with this request.", "I cannot help with that.",
                     "I'm unable to help with that."]
"""Issue 46's refusals: 0.45-0.87 alike, so 0.6 alone put the first in a meaning of its own."""
ISSUE_46_WRONG = ["The answer is 41.", "It is 41.", "I believe the result is 41."]
WRONG = ["The capital of Australia is Sydney.", "Sydney is the capital of Australia.",
         "Australia's capital city is Sydney."]


def paraphrases(messages: list[dict[str, Any]], context: Any) -> str:
    """One fact in four wordings, by run."""
    return PARAPHRASES[int(context.run) % 4]


def unrelated(messages: list[dict[str, Any]], context: Any) -> str:
    """Four unrelated answers, by run."""
    return UNRELATED[int(context.run) % 4]


def structured(messages: list[dict[str, Any]], context: Any) -> dict[str, Any]:
    """A structure, different each run."""
    return {"answer": context.run}


def refuses_or_errs(messages: list[dict[str, Any]], context: Any) -> str:
    """Runs 1–7 refuse (three wordings), runs 8–10 give a wrong fact (three wordings)."""
    if context.run <= 7:
        return REFUSALS[int(context.run) % 3]
    return WRONG[int(context.run) % 3]


def refuses_or_says_41(messages: list[dict[str, Any]], context: Any) -> str:
    """Issue 46's case: runs 1-7 refuse in three wordings (2, 3 and 2 runs), runs 8-10 say 41 in three."""
    if context.run <= 7:
        return ISSUE_46_REFUSALS[int(context.run) % 3]
    return ISSUE_46_WRONG[int(context.run) % 3]


def refuses_or_says_41_reworded(messages: list[dict[str, Any]], context: Any) -> str:
    """The same ways of failing, another wording first: run 1 says "Sorry, I can't assist ...",
    which is only 0.45 alike to the first run's refusal of ``refuses_or_says_41``."""
    if context.run <= 7:
        return ISSUE_46_REFUSALS[(int(context.run) + 2) % 3]
    return ISSUE_46_WRONG[(int(context.run) + 2) % 3]


def chat(messages: list[dict[str, Any]], context: Any) -> str:
    """A multi-turn agent: its answers are the same on every run but the last turn's wording."""
    turn = sum(1 for m in messages if m["role"] == "user")
    return "Hello, how can I help?" if turn == 1 else PARAPHRASES[int(context.run) % 4]


def steady(messages: list[dict[str, Any]], context: Any) -> str:
    """The same answer on every run."""
    return PARAPHRASES[0]


OVERLAPPING = PARAPHRASES + REFUSALS + WRONG + UNRELATED[1:]
"""Thirteen distinct answers; case ``cN`` gives six of them, starting at the 2N-th: neighbouring
cases share four answers, so a cache of embeddings serves part of each case after the first."""


def overlapping(messages: list[dict[str, Any]], context: Any) -> str:
    """Case ``cN``, run r: ``OVERLAPPING[(2N + r % 6) % 13]`` (over 10 runs: counts 2, 2, 2, 2, 1, 1)."""
    case = int(str(context.case_id).lstrip("c") or 0)
    return OVERLAPPING[(2 * case + int(context.run) % 6) % len(OVERLAPPING)]
