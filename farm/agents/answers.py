"""HTTP answers as the adapters read them: whole (``HttpAnswer``) or streamed line by line (``Stream``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from email.message import Message as _HeaderParser
from typing import TYPE_CHECKING, Any, Protocol

from farm.agents.secrets import redact
from farm.errors import AgentError, FaultKind

if TYPE_CHECKING:
    import aiohttp


class StatusCheck(Protocol):
    """What a stream asks of the attempt that opened it (``farm.agents.transport.Attempt``)."""

    def raise_for_status(self, status: int, headers: Mapping[str, str], body: str, what: str) -> None: ...

__all__ = ["HttpAnswer", "Stream"]


@dataclass(frozen=True)
class HttpAnswer:
    """A whole HTTP answer: status, headers (case-insensitive) and body."""

    status: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def content_type(self) -> str:
        """The media type, lower case, without parameters ('' when absent)."""
        return self.headers.get("Content-Type", "").split(";")[0].strip().lower()

    @property
    def text(self) -> str:
        """The body decoded with its declared charset (UTF-8 when none or unknown)."""
        return _decode(self.content, self.headers.get("Content-Type", ""))

    def json(self) -> Any:
        """The body as JSON; raises ``ValueError`` when it does not parse."""
        return json.loads(self.content)


def _decode(content: bytes, content_type: str) -> str:
    charset = "utf-8"
    if "charset=" in content_type:
        parser = _HeaderParser()
        parser["Content-Type"] = content_type
        charset = parser.get_content_charset() or charset
    try:
        return content.decode(charset, errors="replace")
    except LookupError:
        return content.decode("utf-8", errors="replace")


class Stream:
    """An answer being streamed: status and headers now, the body line by line."""

    def __init__(self, response: aiohttp.ClientResponse, attempt: StatusCheck, what: str) -> None:
        self._response = response
        self._attempt = attempt
        self.what = what
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self.lines_read = 0
        """Non-blank lines handed out so far."""

    async def text(self) -> str:
        """The whole (rest of the) body as text: for error answers."""
        return _decode(await self._response.read(), self.headers.get("Content-Type", ""))

    async def raise_for_status(self) -> None:
        """Raise the fault the status means (``Attempt.raise_for_status``), reading the body for it."""
        if self.status >= 400:
            self._attempt.raise_for_status(self.status, self.headers, await self.text(), self.what)

    async def lines(self) -> AsyncIterator[str]:
        """Non-blank lines as they arrive, however long; a fault midway is ``AgentError``.

        Once the answer has begun the agent may have acted, so a cut stream is never retried.
        """
        import aiohttp

        buffer = bytearray()
        try:
            async for chunk in self._response.content.iter_any():
                searched = len(buffer)  # no newline before this point
                buffer += chunk
                while (newline := buffer.find(b"\n", searched)) >= 0:
                    line = bytes(buffer[:newline]).decode("utf-8", errors="replace")
                    del buffer[: newline + 1]
                    searched = 0
                    if line.strip():
                        self.lines_read += 1
                        yield line
        except aiohttp.ClientError as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise AgentError(
                redact(f"{self.what}: the stream was cut after {self.lines_read} line(s) ({reason})"),
                kind=FaultKind.CONNECT,
            ) from None
        tail = bytes(buffer).decode("utf-8", errors="replace")
        if tail.strip():
            self.lines_read += 1
            yield tail

