"""What reading a HOCON suite may do beyond reading it: fetch URLs, take values from the environment.

``include url("http://…")`` (or ``include "https://…"``) makes pyhocon fetch the URL while the
file is parsed, even with ``-k nomatch``: a suite could call out on every load. It is refused
unless ``--allow-remote-includes``. ``${?OPENAI_API_KEY}`` puts an environment variable's value
into the suite; when the variable's name looks like a secret's, that value is registered with
``farm.agents.secrets`` so every report masks it (only values actually referenced: not every
variable named like a secret, so ``TOKENIZERS_PARALLELISM=false`` never masks "false").

The value of such a variable never enters the plan (SPEC 26): ``secrets_deferred`` keeps the
substitution as written (``${?OPENAI_API_KEY}``) and the run reads the variable where it runs (a
worker's environment in a distributed sweep: ``farm.agents.secrets.resolve_deferred``). Other
variables are read as the file is loaded: they may shape the plan (ids, ratios, timeouts).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from typing import Any

from farm.agents.secrets import deferred_reference, register_secret

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
"""A variable is a secret when a ``_``-separated part of its name ends with one of these (plural too)."""
_SUBSTITUTION = re.compile(r"\$\{\??\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REMOTE_SCHEMES = ("http://", "https://")


class RemoteIncludeRefused(Exception):
    """An ``include`` of a URL while remote includes are not allowed."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


def looks_secret(name: str) -> bool:
    """``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``DB_PASSWORD``: yes; ``TOKENIZERS_PARALLELISM``: no."""
    parts = name.upper().split("_")
    return any(part.endswith((word, word + "S")) for part in parts for word in SECRET_WORDS)


def register_env_secrets(text: str) -> None:
    """Mask from now on the value of each secret-named environment variable ``text`` substitutes."""
    for name in set(_SUBSTITUTION.findall(text)):
        if looks_secret(name) and name in os.environ:
            register_secret(os.environ[name])


_PATCHING = threading.RLock()
"""Held while pyhocon's resolver is patched (``secrets_deferred``)."""


@contextlib.contextmanager
def secrets_deferred(deferred: set[str]) -> Iterator[None]:
    """While parsing: a substitution that falls back to a secret-named environment variable gives
    ``${?NAME}`` (or ``${NAME}``) instead of its value, and ``NAME`` is added to ``deferred``.

    A mandatory ``${NAME}`` unset here is still the parser's error (a load error with its line).
    """
    from pyhocon.config_parser import ConfigParser
    from pyhocon.exceptions import ConfigMissingException

    resolve = ConfigParser.__dict__["_resolve_variable"]

    def defer(cls: Any, config: Any, substitution: Any) -> Any:
        name, optional = str(substitution.variable), bool(substitution.optional)
        if _VARIABLE.fullmatch(name) and looks_secret(name) and (optional or name in os.environ):
            try:
                return True, config.get(name)  # a key of the file itself wins over the environment
            except ConfigMissingException:
                deferred.add(name)
                return True, deferred_reference(name, optional=optional)
        return resolve.__func__(cls, config, substitution)

    with _PATCHING:  # the patch is the process's: two loads at once (threads) must not undo each other's
        ConfigParser._resolve_variable = classmethod(defer)
        try:
            yield
        finally:
            ConfigParser._resolve_variable = resolve


@contextlib.contextmanager
def remote_includes(allowed: bool) -> Iterator[None]:
    """While parsing: an include of an http(s) URL raises ``RemoteIncludeRefused`` unless ``allowed``."""
    if allowed:
        yield
        return
    from pyhocon import ConfigFactory

    fetch = ConfigFactory.__dict__["parse_URL"]

    def refuse(cls: Any, url: str, *args: Any, **kwargs: Any) -> Any:
        if str(url).lower().startswith(REMOTE_SCHEMES):
            raise RemoteIncludeRefused(str(url))
        return fetch.__func__(cls, url, *args, **kwargs)  # file:// stays local

    ConfigFactory.parse_URL = classmethod(refuse)
    try:
        yield
    finally:
        ConfigFactory.parse_URL = fetch


__all__ = ["RemoteIncludeRefused", "looks_secret", "register_env_secrets", "remote_includes", "secrets_deferred"]
