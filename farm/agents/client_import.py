"""aiohttp imported without loading the system's trust store at import (aio-libs/aiohttp#9029).

aiohttp's connector builds two default SSL contexts when it is imported (``_SSL_CONTEXT_VERIFIED``
and ``_SSL_CONTEXT_UNVERIFIED``), and each loads the system's CA bundle
(``set_default_verify_paths``: ~25 ms each on a quiet machine, the largest part of aiohttp's
import). The farm never uses them (every session has the farm's own context,
``farm.agents.transport.shared_ssl_context``), but other code in the process may: a python agent
calling aiohttp with its defaults. So while aiohttp is imported, ``set_default_verify_paths``
only notes the context that asked, and each such context loads the paths when it first wraps a
connection: the same trust, paid by the first HTTPS connection that needs it, never by a sweep
of ``http://`` agents.
"""

from __future__ import annotations

import ssl
import sys
import threading
from typing import Any

_lock = threading.Lock()


def import_aiohttp() -> None:
    """Import aiohttp once per process, its default contexts' trust store deferred."""
    if "aiohttp" in sys.modules:
        return
    with _lock:
        if "aiohttp" in sys.modules:
            return
        asked: list[ssl.SSLContext] = []

        def note(context: ssl.SSLContext) -> None:
            asked.append(context)

        cls = ssl.SSLContext  # another library may have put its own class there (truststore does)
        own = cls.__dict__.get("set_default_verify_paths")
        cls.set_default_verify_paths = note  # type: ignore[method-assign,assignment]
        try:
            import aiohttp  # noqa: F401
        finally:
            if own is None:
                del cls.set_default_verify_paths  # the C method of ssl._SSLContext again
            else:
                cls.set_default_verify_paths = own  # type: ignore[method-assign]
        for context in asked:
            _trust_on_first_wrap(context)


def _trust_on_first_wrap(context: ssl.SSLContext) -> None:
    """``context`` loads the default verify paths before its first ``wrap_bio``/``wrap_socket``."""
    lock, loaded, cls = threading.Lock(), list[bool](), type(context)

    def trust() -> None:
        with lock:
            if not loaded:
                cls.set_default_verify_paths(context)
                loaded.append(True)

    def wrap_bio(*args: Any, **kwargs: Any) -> ssl.SSLObject:
        trust()
        return cls.wrap_bio(context, *args, **kwargs)

    def wrap_socket(*args: Any, **kwargs: Any) -> ssl.SSLSocket:
        trust()
        return cls.wrap_socket(context, *args, **kwargs)

    context.wrap_bio = wrap_bio  # type: ignore[method-assign]
    context.wrap_socket = wrap_socket  # type: ignore[method-assign]


__all__ = ["import_aiohttp"]
