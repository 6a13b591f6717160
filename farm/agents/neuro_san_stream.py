"""Reading a neuro-san streaming_chat answer (SPEC Appendix A), line by line as it arrives.

The answer streams as JSON lines ``{"response": ChatMessage}``, read the way neuro-san's own
client reads them (``AnswerMessageProcessor``, ``ChatContextMessageProcessor``,
``TokenAccountingMessageProcessor``):

- the answer: the last ``AI``/``AGENT_FRAMEWORK`` message from the front man (origin of at most
  one element) with a text or a structure; a later one without structure keeps the structure;
- ``chat_context`` and returned ``sly_data``: the last ``AGENT_FRAMEWORK`` message carrying a
  ``chat_context``;
- ``usage``: the front man's last ``AGENT`` token-accounting message (MAXIMAL filter only);
- ``tool_calls``: every ``invoking_start`` message, the front man's and those of the agents it
  called, in stream order, with their results (MAXIMAL only): the run's trajectory.

neuro-san answers errors with HTTP 200: the answer text is then ``Error from <agent>: …`` (its
string error formatter), a fenced JSON ``{"error", "tool"}`` (its JSON formatter), or the handler
writes a bare ``{"error": …}`` line; ``error_in_answer`` and ``StreamReader.server_error`` find them.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import deque
from typing import Any

from farm.agents.secrets import excerpt
from farm.errors import AgentError, FaultKind
from farm.models import JsonValue, ToolCall

MESSAGE_TYPES: dict[int, str] = {0: "UNKNOWN", 1: "SYSTEM", 2: "HUMAN", 4: "AI", 100: "AGENT"}
MESSAGE_TYPES |= {101: "AGENT_FRAMEWORK", 103: "AGENT_TOOL_RESULT", 104: "AGENT_PROGRESS"}
"""neuro-san's ``ChatMessageType`` numbers (``chat.proto`` and ``chat_message_type.py``)."""
ANSWER_TYPES = frozenset({"AI", "AGENT_FRAMEWORK"})
RAW_MESSAGES_KEPT = 200
"""Messages kept in ``Reply.raw``: the first half and the last half of a longer stream."""
RAW_TEXT_KEPT = 4000
STRING_ERROR = re.compile(r"Error from [^\n:]+: \S")
JSON_FENCE = re.compile(r"```json\s*(\{.*\})\s*```", re.DOTALL)
ERROR_KEYS = frozenset({"error", "tool", "details"})


def message_type(value: Any) -> str:
    """A ChatMessage ``type`` as its name, whether it came as a string or a number."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return MESSAGE_TYPES.get(value, f"UNKNOWN({value})")
    return str(value).upper() if value is not None else "UNKNOWN"



class StreamReader:
    """Reads one streaming_chat answer line by line and keeps what the reply needs."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.lines = 0
        self.answered = False
        self.text: str | None = None
        self.structure: JsonValue = None
        self.chat_context: dict[str, Any] | None = None
        self.sly_data: dict[str, Any] | None = None
        self.usage: dict[str, JsonValue] | None = None
        self.tool_calls: list[ToolCall] = []
        self._open_calls: list[tuple[tuple[str, ...], ToolCall]] = []
        self.server_error: str | None = None
        self._head: list[dict[str, Any]] = []
        self._tail: deque[dict[str, Any]] = deque(maxlen=RAW_MESSAGES_KEPT - RAW_MESSAGES_KEPT // 2)
        self.dropped = 0

    def feed_line(self, line: str) -> None:
        if not line.strip():
            return
        self.lines += 1
        try:
            item = json.loads(line)
        except ValueError:
            raise AgentError(f"{self.where}: line {self.lines} of the stream is not JSON: {excerpt(line)}",
                             kind=FaultKind.PARSE) from None
        if isinstance(item, dict) and isinstance(item.get("response"), dict):
            self.feed(item["response"])
        elif isinstance(item, dict) and "error" in item:
            self.server_error = str(item["error"])
        # other lines (heartbeats of other shapes, future keys) carry nothing for the reply

    def feed(self, message: dict[str, Any]) -> None:
        kind = message_type(message.get("type"))
        origin = message.get("origin")
        depth = len(origin) if isinstance(origin, list) else 0
        self._keep(kind, message)
        if kind in ANSWER_TYPES and depth <= 1:
            self._answer(message)
        if kind == "AGENT_FRAMEWORK" and message.get("chat_context") is not None:
            self.chat_context = message["chat_context"]
            self.sly_data = message.get("sly_data", self.sly_data)
        structure = message.get("structure")
        if kind == "AGENT" and depth <= 1 and isinstance(structure, dict) and "total_tokens" in structure:
            self.usage = token_usage(structure)
        self._track_tools(kind, message, depth)

    def _answer(self, message: dict[str, Any]) -> None:
        text, structure = message.get("text"), message.get("structure")
        if text is None and structure is None:
            return
        self.answered = True
        if text is not None:
            self.text = str(text)
        if structure is not None:
            self.structure = structure

    def _track_tools(self, kind: str, message: dict[str, Any], depth: int) -> None:
        """Calls the network made, the front man's and those below it (SPEC 21), in stream order:
        ``invoking_start`` from the calling agent opens one, keyed by the caller's origin and the
        tool's name; the tool's own ``tool_end`` (origin: that key) or the caller's
        ``AGENT_TOOL_RESULT`` (``tool_result_origin``: that key) closes it."""
        found = message.get("structure")
        structure: dict[str, Any] = found if isinstance(found, dict) else {}
        if kind == "AGENT" and structure.get("invoking_start"):
            call = ToolCall(name=str(structure.get("invoked_agent_name")), arguments=structure.get("params"))
            self.tool_calls.append(call)
            self._open_calls.append(((*_names(message.get("origin")), call.name), call))
        elif kind == "AGENT" and depth >= 2 and structure.get("tool_end"):
            ended = self._open_call(message.get("origin"))  # the tool's own output, as data
            if ended is not None and structure.get("tool_error"):
                ended.error = str(structure.get("tool_output"))
            elif ended is not None:
                ended.result = structure.get("tool_output")
        elif kind == "AGENT_TOOL_RESULT":
            done = self._open_call(message.get("tool_result_origin"))  # the output as the caller got it
            if done is not None:
                done.result = message.get("text") if done.result is None else done.result
                self._open_calls = [(key, c) for key, c in self._open_calls if c is not done]

    def _open_call(self, origin: Any) -> ToolCall | None:
        """The open call ``origin`` names: the same path, else (a front man that sent no origin)
        the same tool name."""
        path = _names(origin)
        if len(path) < 2:
            return None
        exact = next((c for key, c in self._open_calls if key == path), None)
        return exact or next((c for key, c in self._open_calls if key[-1] == path[-1]), None)

    def check(self) -> None:
        """Raise ``AgentError`` when the stream carried an error or ended without an answer."""
        if self.server_error is not None:
            raise AgentError(f"{self.where}: server error: {self.server_error}", kind=FaultKind.SERVER)
        if not self.answered:
            raise AgentError(f"{self.where}: the stream ended after {self.lines} line(s) without an answer",
                             kind=FaultKind.PARSE)
        error = error_in_answer(self.text, self.structure)
        if error is not None:
            raise AgentError(f"{self.where}: the agent answered with an error: {excerpt(error)}",
                             kind=FaultKind.CRASHED)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages kept for ``Reply.raw``, in stream order (``dropped`` left out between)."""
        return [*self._head, *self._tail]

    def _keep(self, kind: str, message: dict[str, Any]) -> None:
        """Bounded copy for ``Reply.raw``: chat_context summarised, long texts cut."""
        kept = {**message, "type": kind}
        if isinstance(kept.get("chat_context"), dict):
            histories = kept["chat_context"].get("chat_histories") or []
            kept["chat_context"] = {"chat_histories": f"<{len(histories)} kept in the conversation>"}
        if isinstance(kept.get("text"), str) and len(kept["text"]) > RAW_TEXT_KEPT:
            kept["text"] = kept["text"][:RAW_TEXT_KEPT] + "…"
        if len(self._head) < RAW_MESSAGES_KEPT // 2:
            self._head.append(kept)
            return
        if len(self._tail) == self._tail.maxlen:
            self.dropped += 1
        self._tail.append(kept)


def _names(origin: Any) -> tuple[str, ...]:
    """An origin list's tool names, front man first (``instantiation_index`` left out)."""
    if not isinstance(origin, list):
        return ()
    return tuple(str(o.get("tool")) for o in origin if isinstance(o, dict))


def token_usage(structure: dict[str, Any]) -> dict[str, JsonValue]:
    """neuro-san's token accounting as the farm's usage (tokens, and cost when reported)."""
    usage: dict[str, JsonValue] = {
        key: structure[key] for key in ("prompt_tokens", "completion_tokens", "total_tokens") if key in structure
    }
    if "total_cost" in structure:
        usage["cost"] = structure["total_cost"]
    return usage


def error_in_answer(text: str | None, structure: JsonValue) -> str | None:
    """The error neuro-san's error formatters put in an answer, or None for a real answer."""
    if isinstance(text, str):
        stripped = text.strip()
        if STRING_ERROR.match(stripped):
            return stripped
        fenced = JSON_FENCE.fullmatch(stripped)
        if fenced:
            with contextlib.suppress(ValueError):
                found = json.loads(fenced.group(1))
                if is_error_dict(found):
                    return describe_error(found)
    return describe_error(structure) if is_error_dict(structure) else None


def is_error_dict(value: Any) -> bool:
    return isinstance(value, dict) and {"error", "tool"} <= set(value) and set(value) <= ERROR_KEYS


def describe_error(value: dict[str, Any]) -> str:
    details = f" ({value['details']})" if value.get("details") else ""
    return f"Error from {value['tool']}: {value['error']}{details}"
