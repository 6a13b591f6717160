"""A TCP proxy on 127.0.0.1 that can fail like a network: a real fault injector for the tests.

It forwards bytes to a server (a private ``redis-server``) until told to ``blackout``: then every
open connection is reset (RST, as when the server's process dies) and, for a while, new
connections are accepted but never answered (a server that is back on its port but frozen, or a
network that drops packets). Deterministic where killing and restarting the server is a race.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time


def _reset(sock: socket.socket) -> None:
    """Close with RST, not FIN: the peer sees "connection reset by peer"."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class FaultProxy:
    """``FaultProxy(port)`` listens on a free port of its own (``url``) in front of ``port``."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.silent_until = 0.0
        self.first_after: float | None = None
        self.lock = threading.Lock()
        self.cut = threading.Event()  # replaced at each blackout: the pumps of the pairs open then reset them
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def blackout(self, seconds: float, *, first_after: float = 1.0) -> None:
        """Reset every connection; for ``seconds``, accept new ones and never answer: the first
        is reset after ``first_after`` seconds (a client's quick reconnect fails), the later ones
        when the blackout ends (a client's next reconnect hangs until its own timeout)."""
        with self.lock:
            self.silent_until = time.monotonic() + seconds
            self.first_after = first_after
            cut, self.cut = self.cut, threading.Event()
        cut.set()

    def close(self) -> None:
        self.listener.close()
        self.blackout(0)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                now = time.monotonic()
                silent, cut = now < self.silent_until, self.cut
                hold = self.silent_until - now if self.first_after is None else self.first_after
                if silent:
                    self.first_after = None
            if silent:  # held, unanswered, then reset
                threading.Thread(target=self._reset_after, args=(client, hold), daemon=True).start()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                _reset(client)
                continue
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink, cut), daemon=True).start()

    @staticmethod
    def _reset_after(client: socket.socket, seconds: float) -> None:
        time.sleep(max(0.0, seconds))
        _reset(client)

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, cut: threading.Event) -> None:
        """Copy one direction; a short timeout so no thread stays blocked in a socket a blackout
        resets (a socket closed under a blocked recv sends nothing until that recv returns)."""
        source.settimeout(0.1)
        try:
            while not cut.is_set():
                try:
                    data = source.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        if cut.is_set():
            _reset(source)
            _reset(sink)
            return
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
