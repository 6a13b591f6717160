"""Keeping keys out of replies, errors and logs.

Whatever reads a secret (a connector ``key``, a header value from ``$ENV``) registers it here;
adapters pass every ``Reply.raw`` and error message through ``redact`` before it leaves them.
So the guarantee holds at the source: nothing downstream has to remember to clean up.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Collection, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, TextIO, cast

from farm.errors import AgentResolutionError
from farm.models import Reply
from farm.settings import url_credentials

MASK = "***"
EXCERPT = 300
"""Characters of a body kept in an error message."""
MIN_SECRET_LENGTH = 4
"""Shorter values are not registered: masking every "a" in a reply would destroy it."""
SENSITIVE_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"})
"""Headers whose values are masked whether registered or not."""
ENV_REFERENCE = re.compile(r"\$ENV\.([A-Za-z_][A-Za-z0-9_]*)")

_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask ``value`` from now on (values shorter than ``MIN_SECRET_LENGTH`` are ignored)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _secrets.add(value)


def register_url_password(url: str | None) -> None:
    """Mask from now on the password of ``url`` (``-n http://user:PASSWORD@host/``), wherever it is
    quoted (an adapter's error message names its URL)."""
    parts = url_credentials(url) if url else None
    if parts is not None:
        register_secret(parts[2])


def any_secret() -> bool:
    """Whether a secret was registered in this process (read without the lock: a set's size is atomic)."""
    return bool(_secrets)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (longest first)."""
    if not _secrets:  # the common case, read without the lock (a set's size is read atomically): nothing to mask
        return text
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_value(value: Any) -> Any:
    """A JSON value with ``redact`` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def redacted(value: Any) -> Any:
    """``redact_value(value)``, but ``value`` itself (no copy) when no secret occurs in it.

    One ``redact`` over all its strings joined by NUL finds what ``redact_value`` would mask
    string by string (a match across a NUL only sends us to ``redact_value``): one lock and
    one pass instead of one per string of a request body.
    """
    with _lock:
        if not _secrets:  # the common case: no key was ever read, nothing can leak
            return value
    strings: list[str] = []
    _collect_strings(value, strings)
    joined = "\0".join(strings)
    return value if redact(joined) == joined else redact_value(value)


def _collect_strings(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            into.append(str(key))
            _collect_strings(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect_strings(item, into)


class MaskingStream:
    """A text stream that writes ``redact(text)``: a report written through it never holds a secret."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def masking(stream: TextIO) -> TextIO:
    """``stream`` itself when no secret was ever registered (the common case), else a ``MaskingStream``."""
    with _lock:
        if not _secrets:
            return stream
    return cast(TextIO, MaskingStream(stream))


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """A short, redacted, one-line view of a body for error messages."""
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def redact_reply(reply: Reply) -> Reply:
    """The reply with secrets masked everywhere, answer included (an agent may echo a key)."""
    with _lock:
        if not _secrets:
            return reply
    return Reply.model_validate(redact_value(reply.model_dump(mode="json")))


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers fit for a report: sensitive ones masked, registered secrets masked in the rest."""
    return {name: MASK if name.lower() in SENSITIVE_HEADERS else redact(value) for name, value in headers.items()}


_OPTIONAL: ContextVar[bool] = ContextVar("farm_secrets_optional", default=False)


@contextlib.contextmanager
def secrets_optional() -> Iterator[None]:
    """Inside the block an unset ``$ENV.NAME`` expands to '' instead of failing: adapters built
    for ``--replay``, which never calls them (CI replays without secrets)."""
    token = _OPTIONAL.set(True)
    try:
        yield
    finally:
        _OPTIONAL.reset(token)


PLAIN_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}")
"""``${NAME:-default}``: a setting from the environment that is no secret (a host, a port): not masked."""


def expand_env(value: str, *, where: str) -> str:
    """Replace each ``$ENV.NAME`` in ``value`` by that environment variable, registering it as a
    secret, and each ``${NAME:-default}`` by the variable or the default, as plain text.

    Raises:
        AgentResolutionError: a referenced variable is not set (``where`` names file and key),
            outside ``secrets_optional``.
    """

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None and _OPTIONAL.get():
            return ""
        if found is None:
            raise AgentResolutionError(f"{where}: environment variable {name} is not set")
        register_secret(found)
        return found

    value = PLAIN_REFERENCE.sub(lambda match: os.environ.get(match.group(1)) or match.group(2), value)
    return ENV_REFERENCE.sub(lookup, value)


DEFERRED_REFERENCE = re.compile(r"\$\{(\??)([A-Za-z_][A-Za-z0-9_]*)\}")
"""How a plan holds a suite's substitution of a secret variable: as written, ``${?NAME}`` or ``${NAME}``."""


def deferred_reference(name: str, *, optional: bool) -> str:
    """The text a plan holds in place of ``name``'s value (``farm.suites.hocon_guard`` writes it)."""
    return f"${{{'?' if optional else ''}{name}}}"


def resolve_deferred(value: Any, names: Collection[str], *, where: str) -> Any:
    """A JSON value with each ``${?NAME}`` / ``${NAME}`` of ``names`` replaced by this process's
    environment variable, registered as a secret: where the run runs (a worker's environment in a
    distributed sweep), never in the plan. An unset ``${?NAME}`` is ''.

    Raises:
        AgentResolutionError: a ``${NAME}`` (not optional) is not set here (``where`` names the case).
    """

    def lookup(match: re.Match[str]) -> str:
        optional, name = match.group(1), match.group(2)
        if name not in names:
            return match.group(0)
        found = os.environ.get(name)
        if found is None and optional:
            return ""
        if found is None:
            raise AgentResolutionError(f"{where}: environment variable {name} is not set where the run runs")
        register_secret(found)
        return found

    if isinstance(value, str):
        return DEFERRED_REFERENCE.sub(lookup, value) if "${" in value else value
    if isinstance(value, dict):
        return {key: resolve_deferred(item, names, where=where) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_deferred(item, names, where=where) for item in value]
    return value
