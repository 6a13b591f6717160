"""Commands a Redis server receives, counted with ``MONITOR``: those clients sent, by command and
by where they go, apart from those Lua scripts ran (``INFO commandstats`` counts both alike).

Shared by ``tests/distributed/test_store_commands.py`` and ``benchmarks/bench_store.py``.
"""

from __future__ import annotations

import contextlib
import re
import threading
import uuid
from collections import Counter

import redis


class Monitor:
    """``MONITOR`` on its own connection, in a thread: each command a client sent, by command, and
    those Lua scripts ran, apart (``INFO commandstats`` counts both alike)."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url, decode_responses=True)
        self.sent: Counter[str] = Counter()
        self.in_lua: Counter[str] = Counter()
        self.keys: Counter[str] = Counter()
        self.order: list[str] = []
        """Every command clients sent, in the order the server received them (by name)."""
        self.ran: Counter[tuple[str, str]] = Counter()
        """Every command the server ran, sent or inside a script, by (name, first key): what
        ``INFO commandstats`` counts, and where each went."""
        self.sent_to: Counter[tuple[str, str]] = Counter()
        """Those clients sent, by (name, first key)."""
        self._end = f"monitor-end-{uuid.uuid4().hex}"
        self._ended = threading.Event()
        self._monitor = self.client.monitor()
        self._monitor.__enter__()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for event in self._monitor.listen():
                command = str(event["command"])
                name = command.split(" ", 1)[0].lower().strip('"')
                if name == "monitor":
                    continue
                if name == "echo" and self._end in command:
                    self._ended.set()
                    return
                lua = event.get("client_type") == "lua"
                (self.in_lua if lua else self.sent)[name] += 1
                where = (name, _first_key(command))
                self.ran[where] += 1
                if not lua:
                    self.sent_to[where] += 1
                    self.order.append(name)
                    self.keys[f"{name} {_shape(str(event['command']))}"] += 1
        except Exception:  # the connection closed: stop reading
            return

    def stop(self, timeout: float = 60.0) -> None:
        """Stop once the server has shown every command it ran before this call: an ``ECHO`` of
        a token sent now is shown after them (MONITOR shows commands in the order they ran), so
        no guess of how long what is still on the wire takes on a busy machine."""
        with contextlib.suppress(Exception):
            self.client.echo(self._end)
            self._ended.wait(timeout)
        with contextlib.suppress(Exception):
            self._monitor.connection.disconnect()
        self._thread.join(5)
        self.client.close()


def _first_key(command: str) -> str:
    """The first key a command names (a script call's: after its sha and key count; an ``EVAL``'s
    script text has spaces, so its keys are not told apart: '')."""
    parts = command.split(" ")
    name = parts[0].lower()
    if name == "evalsha":
        return parts[3] if len(parts) > 3 and parts[2] != "0" else ""
    return parts[1] if len(parts) > 1 and name != "eval" else ""


def _shape(command: str) -> str:
    """A command's first key with ids and numbers blanked: where the command goes."""
    parts = command.split(" ")
    key = parts[1] if len(parts) > 1 else ""
    if key.isdigit() or (len(parts) > 1 and parts[0].lower() in ("evalsha", "eval")):
        key = " ".join(parts[1:4])  # a script: its sha and its first key
    return re.sub(r"[0-9a-f]{12,}|\d+", "#", key)[:90]
