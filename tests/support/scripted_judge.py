"""An OpenAI-compatible judge whose verdicts follow a script: for judge-trust tests (issue 42).

``ScriptedJudge(decide)`` answers each chat completion with ``{"passed": decide(output, n, m)}``:
``output`` is the output the farm asked about (from its ``{output, input, criteria}`` message), ``n``
the call's index among all calls, ``m`` its index among the calls about that output (both from 0).
Every answer reports the same ``USAGE``, so a priced model's cost per call is known.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

from tests.support.fleet_project import MODEL, PRICE
from tests.support.servers import HOST, Served, load_example, serve_in_thread

USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
CALL_USD = (100 * PRICE["input"] + 10 * PRICE["output"]) / 1e6
Decide = Callable[[str, int, int], bool]


class ScriptedJudge(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, decide: Decide) -> None:
        common = load_example("_common")

        class Handler(common.JsonHandler):  # type: ignore[misc, name-defined]
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                passed = self.server.verdict(asked_output(body))
                content = json.dumps({"passed": passed, "reason": "scripted"})
                self.send_json(200, {"id": "x", "object": "chat.completion", "model": MODEL, "usage": USAGE,
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": content}}]})

        super().__init__((HOST, 0), Handler)
        self.decide = decide
        self.calls = 0
        self.per_output: Counter[str] = Counter()
        self.lock = threading.Lock()

    def verdict(self, output: str) -> bool:
        with self.lock:
            n, m = self.calls, self.per_output[output]
            self.calls += 1
            self.per_output[output] += 1
            return self.decide(output, n, m)


def asked_output(body: dict[str, Any]) -> str:
    """The output a judge request asks about (the last user message is the farm's JSON)."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"][-1]
    content = user.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    try:
        return str(json.loads(text).get("output"))
    except (ValueError, AttributeError):
        return text


@contextmanager
def scripted_judge(decide: Decide) -> Iterator[tuple[Served, ScriptedJudge]]:
    server = ScriptedJudge(decide)
    with serve_in_thread(server) as served:
        yield served, server
