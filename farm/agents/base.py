"""The seam to the agent under test.

Every adapter (python, http, prompt, neuro-san, command) implements ``Agent.respond``: one
turn in, one ``Reply`` out. ``execute`` never knows which adapter it holds. An adapter raises
``farm.errors.AgentError`` when the agent fails (bad response, connection refused after
retries); any other exception is recorded the same way by ``execute``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from farm.models import JsonValue, Reply
from farm.models.base import empty_list


class AgentContext(BaseModel):
    """The test environment of one call (SPEC 5.3).

    Python agents get this object; HTTP agents get ``model_dump()`` as the ``context`` key;
    neuro-san agents get the case ``metadata`` as request headers.
    """

    model_config = ConfigDict(extra="forbid")

    user_id: str = "test-user"
    team_id: str = "test-team"
    locale: str = "en-us"
    client_type: str = "test"
    client_ip: str = "127.0.0.1"
    referer: str = "test"
    accept: str = "standard"
    case_id: str = ""
    run: int = 1
    turn: int = 1
    """1-based turn of the case (record/replay keys calls by it)."""
    chat_id: str = ""
    """Unique per run and conversation."""
    metadata: dict[str, JsonValue] | None = None
    sly_data: dict[str, JsonValue] | None = None
    connector: str | None = None
    """The ``-c`` override, or None."""
    options: dict[str, JsonValue] | None = None
    """A Yao case's ``options`` (``connector``, ``mode``, ``metadata``, ``skip``, …), as Yao passes them."""
    authorized: dict[str, JsonValue] | None = None
    """``--ctx``'s ``authorized`` block (``user_id``, ``team_id``, ``constraints``, …), or None."""


@dataclass
class Conversation:
    """Per-conversation state an adapter may keep between turns of one run.

    ``execute`` makes a fresh one at the start of every run and whenever a turn said
    ``continue_conversation: false``. Adapters store what they need to continue (neuro-san's
    ``chat_context``) in ``state`` and count retried transient faults in ``retries``.
    """

    chat_id: str
    state: dict[str, Any] = field(default_factory=dict)
    retries: int = 0


class AgentRequest(BaseModel):
    """One turn sent to an agent."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    messages: list[dict[str, JsonValue]]
    """The conversation so far plus this turn's messages, OpenAI-style dicts."""
    new_messages: list[dict[str, JsonValue]] = Field(default_factory=empty_list)
    """Only this turn's messages (stateful protocols such as neuro-san send just these)."""
    sly_data: dict[str, JsonValue] | None = None
    chat_filter: str | None = None
    timeout_s: float | None = None
    """Time left for this turn; adapters with their own deadlines (streams, subprocesses)
    use it. ``execute`` enforces it anyway."""
    context: AgentContext
    conversation: Conversation


def consulting_request(messages: list[dict[str, JsonValue]], purpose: str,
                       metadata: dict[str, JsonValue] | None = None) -> AgentRequest:
    """One turn in a fresh conversation, for an agent the farm consults rather than tests (a judge,
    a simulated user): ``purpose`` is its case id and the prefix of its chat id."""
    chat_id = f"{purpose}-{uuid.uuid4().hex[:12]}"
    return AgentRequest(messages=messages, new_messages=messages, conversation=Conversation(chat_id=chat_id),
                        context=AgentContext(case_id=purpose, chat_id=chat_id, metadata=metadata))


@runtime_checkable
class Agent(Protocol):
    """An agent under test, bound to one reference (a manifest, a URL, a callable)."""

    id: str

    async def respond(self, request: AgentRequest) -> Reply:
        """Send one turn and return the agent's reply; raise ``AgentError`` on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections and processes; called once when the sweep ends."""
        ...
