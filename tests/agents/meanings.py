"""Agents whose answers differ in wording or in meaning (the semantic figures' tests, SPEC 16)."""

from __future__ import annotations

from typing import Any

PARAPHRASES = ["Paris is the capital of France.", "The capital of France is Paris.",
               "France's capital city is Paris.", "Paris serves as the capital of France."]
UNRELATED = ["Paris is the capital of France.", "Water boils at 100 degrees Celsius at sea level.",
             "The stock market fell sharply today.", "I like playing football on weekends."]
REFUSALS = ["I'm sorry, but I can't help with that.", "Sorry, I am unable to assist with this request.",
            "I cannot help you with this."]
WRONG = ["The capital of Australia is Sydney.", "Sydney is the capital of Australia.",
         "Australia's capital city is Sydney."]


def paraphrases(messages: list[dict[str, Any]], context: Any) -> str:
    """One fact in four wordings, by run."""
    return PARAPHRASES[context.run % 4]


def unrelated(messages: list[dict[str, Any]], context: Any) -> str:
    """Four unrelated answers, by run."""
    return UNRELATED[context.run % 4]


def structured(messages: list[dict[str, Any]], context: Any) -> dict[str, Any]:
    """A structure, different each run."""
    return {"answer": context.run}


def refuses_or_errs(messages: list[dict[str, Any]], context: Any) -> str:
    """Runs 1–7 refuse (three wordings), runs 8–10 give a wrong fact (three wordings)."""
    if context.run <= 7:
        return REFUSALS[context.run % 3]
    return WRONG[context.run % 3]


def chat(messages: list[dict[str, Any]], context: Any) -> str:
    """A multi-turn agent: its answers are the same on every run but the last turn's wording."""
    turn = sum(1 for m in messages if m["role"] == "user")
    return "Hello, how can I help?" if turn == 1 else PARAPHRASES[context.run % 4]


def steady(messages: list[dict[str, Any]], context: Any) -> str:
    """The same answer on every run."""
    return PARAPHRASES[0]
