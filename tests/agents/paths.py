"""An agent whose tool calls are fixed by the run index (the trajectory tests, SPEC 21).

Over runs 1..10 it calls, and then answers "done":

====  ================================  ====
run   path                              note
====  ================================  ====
1-4   search → fetch → answer           search {"q": "rome"}
5     search → answer
6     search → answer                   search {"q": "paris"}
7     fetch → search → answer
8     search → fetch → fetch → answer
9     (no call)
10    search → delete → answer
====  ================================  ====

Runs past 10 repeat the table (run 11 as run 1). ``respond_shifted`` takes a new path, search →
delete → answer, in the first half of every ten runs (the paths moved, for ``farm compare``).
``respond_turns`` spreads a run's path over a two-turn case: the first call in turn 1, the rest
in turn 2.
"""

from __future__ import annotations

from typing import Any

from farm.models import Reply, ToolCall

PATHS = {
    **{run: ["search", "fetch", "answer"] for run in range(1, 5)},
    5: ["search", "answer"], 6: ["search", "answer"], 7: ["fetch", "search", "answer"],
    8: ["search", "fetch", "fetch", "answer"], 9: [], 10: ["search", "delete", "answer"],
}


def calls(run: int) -> list[ToolCall]:
    run = (run - 1) % 10 + 1
    query = "paris" if run == 6 else "rome"
    return [ToolCall(name=name, arguments={"q": query} if name == "search" else {}) for name in PATHS[run]]


def respond(messages: list[dict[str, Any]], context: Any) -> Reply:
    return Reply(text="done", tool_calls=calls(context.run))


def respond_shifted(messages: list[dict[str, Any]], context: Any) -> Reply:
    if (context.run - 1) % 10 < 5:
        return Reply(text="done", tool_calls=[ToolCall(name=n) for n in ("search", "delete", "answer")])
    return respond(messages, context)


def respond_turns(messages: list[dict[str, Any]], context: Any) -> Reply:
    made = calls(context.run)
    return Reply(text=f"turn {context.turn}", tool_calls=made[:1] if context.turn == 1 else made[1:])


def echo_tool(messages: list[dict[str, Any]], context: Any) -> Reply:
    """Calls ``lookup`` with what the user said (a secret substituted into a suite travels in it)."""
    said = str(messages[-1].get("content"))
    return Reply(text="looked up", tool_calls=[ToolCall(name="lookup", arguments={"said": said}, error=said)])
