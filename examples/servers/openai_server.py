"""A deterministic OpenAI-compatible chat-completions server, for trying the farm offline.

For rehearsals only (tests, demos, a sweep rehearsed against injected faults): never put it in
front of production traffic. It answers by rules, not a model, keeps every request's last user
message in memory (``/stats``), and compares its key in plain Python.

Run it::

    python examples/servers/openai_server.py --port 8001 [--key SECRET]

and point a connector at it (``connectors/local/echo.conn.yao``)::

    {"type": "openai", "options": {"model": "echo", "host": "http://127.0.0.1:8001", "key": "SECRET"}}

``POST /v1/chat/completions`` answers by the request:

- the system prompt mentions ``judge``: a verdict ``{"passed": bool, "reason": str}``. The magic
  words ``JUDGE_PASS``/``JUDGE_FAIL``/``JUDGE_EQUIVOCAL`` anywhere in the messages force it.
  Otherwise the user message must be the farm's JSON ``{"output", "input", "criteria"}``: terms
  quoted in the criteria must all occur in the output (no quoted terms: at least half of the
  criteria's words of 4+ letters must). Any other user message makes the judge equivocate.
- the system prompt mentions ``keyword``: ``{"keywords": [...]}`` (the last user message's
  words of 4+ letters that are not stop words, in order, deduplicated).
- the system prompt mentions ``user simulator`` (the farm's built-in simulator): the user message
  is the simulator input JSON. With ``extra.script`` (a list), entry ``turn_number - 1`` is the
  answer: a string is ``{"message": it, "goal_achieved": false}``, an object is sent as it is,
  a string starting ``RAW:`` is sent as plain text; past the end of the script the answer is
  ``{"message": "Thanks, that is all.", "goal_achieved": true}``. Without a script: the goal as
  the message, ``goal_achieved`` once no checkpoint is pending.
- the system prompt mentions ``failure mode`` (``farm assess``): the number of the first known
  mode that names the failure class, else the new mode ``Fails as <class>.``.
- the request offers ``tools`` and the last user message names one: a call to that tool with
  ``{"input": <message>}``; a last message of role ``tool`` is answered ``tool said: …``.
- otherwise: the last user message, echoed.

Every answer reports ``usage`` (words as tokens); models starting with ``priced`` add ``cost``.
Its ``model`` echoes the requested one; ``--serve-model NAME`` answers ``model: NAME`` whatever was
asked (a provider swapping the model behind a name), ``--system-fingerprint FP`` adds
``system_fingerprint``. Every answer carries an ``x-request-id`` header (``req-<n>``).
Faults are injected by the model name:

- ``fail-<status>[x<N>]-then-ok``: answer <status> the first N times (default 1) per key, with
  ``Retry-After: 1`` on 429/503; the key is the ``X-Fault-Key`` header, else the last user message.
- ``error-<status>``: always that status; ``slow-<seconds>s``: answer after a delay;
  ``malformed-json``: a truncated JSON body; ``crash``: close the connection mid-body;
  ``quota`` (or ``quota-exhausted``): 429 with OpenAI's ``insufficient_quota`` error body (a quota
  used up, which waiting does not cure); ``html``: an HTML page instead of JSON.

Faults at *rates*, seeded, and answers right with a probability (a chaos provider to rehearse a
sweep against): ``--fault-rate 429=0.1 --fault-rate stall=0.1 --seed 7 [--stall-s 2]`` and the
model ``right-<p>`` (or ``metadata.p_right``); see ``chaos.py`` for the draws.

With ``--key``, requests without ``Authorization: Bearer <key>`` get 401, ``GET /stats``
included. ``GET /stats`` returns the request count per key (the last user messages: what the
sweep sent) and the faults injected. Standard library only.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import ThreadingHTTPServer
from typing import Any

from _common import JsonHandler, base_parser, serve  # sibling module: run as a script or by path
from chaos import Chaos, parse_rate

_STOP = (
    "this that with from into about have been were what when where which while would could "
    "should their there these those them they your yours will just than then also some more "
    "most very only such over under after before because between please extract keywords"
)
STOP_WORDS = frozenset(_STOP.split(" "))
FAULT = re.compile(r"fail-(\d{3})(?:x(\d+))?-then-ok")
ERROR = re.compile(r"error-(\d{3})")
SLOW = re.compile(r"slow-(\d+(?:\.\d+)?)s")
WORD = re.compile(r"[^\W\d_][\w'-]*")
RIGHT = re.compile(r"right-(\d*\.?\d+)")


class ChatServer(ThreadingHTTPServer):
    """The server, holding its key and what it has seen (tests read ``hits``)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], key: str | None = None, verbose: bool = False,
                 chaos: Chaos | None = None, serve_model: str | None = None,
                 system_fingerprint: str | None = None):
        super().__init__(address, ChatHandler)
        self.key = key
        self.serve_model = serve_model
        """The ``model`` every answer names (None: the requested one)."""
        self.system_fingerprint = system_fingerprint
        self.answered = 0
        """Answers sent: the request ids count them."""
        self.chaos = chaos
        self.verbose = verbose
        self.lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        """Requests per fault key (``X-Fault-Key`` header, else the last user message)."""
        self.requests: list[dict[str, Any]] = []
        """The last requests received (path, headers, body), newest last."""

    def served(self, reply: dict[str, Any]) -> dict[str, str]:
        """Name the served model and fingerprint in ``reply``; return its request id header."""
        if self.serve_model:
            reply["model"] = self.serve_model
        if self.system_fingerprint:
            reply["system_fingerprint"] = self.system_fingerprint
        with self.lock:
            self.answered += 1
            return {"x-request-id": f"req-{self.answered}"}

    def record(self, path: str, headers: dict[str, str], body: Any, key: str) -> int:
        """Remember one request; return how many times this key has been seen."""
        with self.lock:
            self.hits[key] += 1
            self.requests.append({"path": path, "headers": headers, "body": body})
            del self.requests[:-200]
            return self.hits[key]


# ------------------------------------------------------------------------------ the answers


def message_text(message: dict[str, Any]) -> str:
    """A message's text: string content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def last_of(messages: list[dict[str, Any]], role: str) -> str:
    for message in reversed(messages):
        if message.get("role") == role:
            return message_text(message)
    return ""


def content_words(text: str) -> list[str]:
    """Words of 4+ letters that are not stop words, lower-cased, in order, deduplicated."""
    seen: dict[str, None] = {}
    for word in WORD.findall(text.lower()):
        word = word.strip("'-")
        if len(word) >= 4 and word not in STOP_WORDS:
            seen.setdefault(word, None)
    return list(seen)


def judgment_asked(user: str) -> tuple[str, str] | None:
    """(criterion, lower-cased output) from the farm's ``{output, input, criteria}`` JSON."""
    try:
        asked = json.loads(user)
    except ValueError:
        return None
    if not isinstance(asked, dict) or not isinstance(asked.get("criteria"), str) or "output" not in asked:
        return None
    output = asked["output"]
    actual = output if isinstance(output, str) else json.dumps(output, sort_keys=True)
    return asked["criteria"], actual.lower()


def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A deterministic verdict (see the module docstring)."""
    everything = "\n".join(message_text(m) for m in messages)
    for word, passed in (("JUDGE_PASS", True), ("JUDGE_FAIL", False)):
        if word in everything:
            return {"passed": passed, "reason": f"the magic word {word} was given"}
    asked = judgment_asked(last_of(messages, "user"))
    if "JUDGE_EQUIVOCAL" in everything or asked is None:
        return {"equivocal": True}
    criterion, actual = asked
    quoted = re.findall(r"'([^']+)'|\"([^\"]+)\"", criterion)
    terms = [a or b for a, b in quoted]
    if terms:
        missing = [t for t in terms if t.lower() not in actual]
        return {"passed": not missing, "reason": f"missing {missing}" if missing else "all terms found"}
    words = content_words(criterion)
    hits = [w for w in words if w in actual]
    passed = bool(words) and 2 * len(hits) >= len(words)
    return {"passed": passed, "reason": f"{len(hits)} of {len(words)} criterion words found"}


def judge_content(messages: list[dict[str, Any]]) -> str:
    verdict = judge(messages)
    if verdict.get("equivocal"):
        return "I cannot tell whether the criterion is met."
    return json.dumps(verdict)


def simulate(user: str) -> str:
    """The simulated user's next message (see the module docstring)."""
    try:
        asked = json.loads(user)
    except ValueError:
        return "I do not understand the simulator input."
    script = (asked.get("extra") or {}).get("script")
    turn = int(asked.get("turn_number") or 1)
    if isinstance(script, list):
        if turn - 1 >= len(script):
            return json.dumps({"message": "Thanks, that is all.", "goal_achieved": True})
        entry = script[turn - 1]
        if isinstance(entry, str) and entry.startswith("RAW:"):
            return entry[len("RAW:"):]
        return json.dumps(entry if isinstance(entry, dict) else {"message": entry, "goal_achieved": False})
    goal = asked.get("goal") or "get help"
    return json.dumps({"message": f"I would like to {goal}.", "goal_achieved": "checkpoints_pending" not in asked})


def name_failure_mode(user: str) -> str:
    """A known mode's number, or a new mode, for ``farm assess`` (see the module docstring)."""
    failure_class = re.search(r"The failure_class is: (\S+)", user)
    name = failure_class.group(1) if failure_class else "unknown"
    known = re.findall(r"^(\d+)\. (.*)$", user, re.MULTILINE)
    for number, mode in known:
        if name in mode:
            return number
    return f"Fails as {name}."


def tool_call(body: dict[str, Any], user: str) -> dict[str, Any] | None:
    """A call to the first offered tool whose name the user message mentions."""
    for tool in body.get("tools") or []:
        name = (tool.get("function") or {}).get("name", "")
        if name and name in user:
            function = {"name": name, "arguments": json.dumps({"input": user})}
            return {"id": f"call_{name}", "type": "function", "function": function}
    return None


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions response for a well-formed request."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system, user = last_of(messages, "system").lower(), last_of(messages, "user")
    message: dict[str, Any] = {"role": "assistant", "content": None}
    call = tool_call(body, user) if messages and messages[-1].get("role") == "user" else None
    if call:
        message["tool_calls"] = [call]
    elif messages and messages[-1].get("role") == "tool":
        message["content"] = "tool said: " + message_text(messages[-1])
    elif "user simulator" in system:
        message["content"] = simulate(user)
    elif "failure mode" in system:
        message["content"] = name_failure_mode(user)
    elif "judge" in system:
        message["content"] = judge_content(messages)
    elif "keyword" in system:
        message["content"] = json.dumps({"keywords": content_words(user)})
    else:
        message["content"] = user
    model = str(body.get("model") or "echo")
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
        "usage": usage(messages, message, model),
    }


def usage(messages: list[dict[str, Any]], message: dict[str, Any], model: str) -> dict[str, Any]:
    prompt = sum(len(message_text(m).split()) for m in messages)
    completion = len(str(message.get("content") or message.get("tool_calls") or "").split())
    counts: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if model.startswith("priced"):
        counts["cost"] = round((prompt + completion) * 1e-6, 9)
    return counts


# ------------------------------------------------------------------------------ the handler


class ChatHandler(JsonHandler):
    server: ChatServer

    def authorized(self) -> bool:
        """With ``--key``, the request carries it; else a 401 is sent and False returned."""
        if self.server.key and self.headers.get("Authorization") != f"Bearer {self.server.key}":
            self.send_json(401, {"error": {"message": "invalid API key"}})
            return False
        return True

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/stats":
            if not self.authorized():  # the counts are keyed by what the sweep sent: its prompts
                return
            with self.server.lock:
                faults = dict(self.server.chaos.faults) if self.server.chaos else {}
                self.send_json(200, {"hits": dict(self.server.hits), "faults": faults})
        elif self.path.rstrip("/") in ("/v1/models", "/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "echo", "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if not self.authorized():
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self.send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list):
            self.send_json(400, {"error": {"message": "'messages' must be a list"}})
            return
        key = self.headers.get("X-Fault-Key") or last_of(messages, "user")
        seen = self.server.record(self.path, dict(self.headers.items()), body, key)
        if self.server.chaos is None or self.chaotic(body, key):
            self.respond(body, seen)

    def chaotic(self, body: dict[str, Any], key: str) -> bool:
        """The chaos provider's draws (``chaos.py``): False when a fault answered instead."""
        chaos = self.server.chaos
        assert chaos is not None
        fault = chaos.fault(key)
        if fault in ("429", "5xx"):
            status = 429 if fault == "429" else 503
            self.send_json(status, {"error": {"message": f"chaos: {status}"}}, {"Retry-After": "1"})
            return False
        if fault == "quota":
            self.send_json(429, {"error": {"message": "chaos: quota exceeded", "type": "insufficient_quota",
                                           "code": "insufficient_quota"}})
            return False
        if fault == "drop":
            self.close_connection = True
            return False
        if fault == "stall":
            time.sleep(chaos.stall_s)
        right = RIGHT.fullmatch(str(body.get("model") or ""))
        metadata = body.get("metadata")
        p = float(right.group(1)) if right else metadata.get("p_right") if isinstance(metadata, dict) else None
        if isinstance(p, int | float):
            user = last_of(body.get("messages") or [], "user")
            content = user if chaos.right(key, float(p)) else f"wrong: {user}"
            reply = answer(body)
            reply["choices"][0]["message"]["content"] = content
            self.send_json(200, reply, self.server.served(reply))
            return False
        return True

    def respond(self, body: dict[str, Any], seen: int) -> None:
        """Inject the fault the model name asks for, else answer."""
        model = str(body.get("model") or "")
        if fault := FAULT.fullmatch(model):
            status, times = int(fault.group(1)), int(fault.group(2) or 1)
            if seen <= times:
                retry = {"Retry-After": "1"} if status in (429, 503) else {}
                self.send_json(status, {"error": {"message": f"injected {status}"}}, retry)
                return
        elif error := ERROR.fullmatch(model):
            self.send_json(int(error.group(1)), {"error": {"message": "injected error"}})
            return
        elif slow := SLOW.fullmatch(model):
            time.sleep(float(slow.group(1)))
        elif model in ("quota", "quota-exhausted"):
            error = {"message": "You exceeded your current quota, please check your plan and billing details.",
                     "type": "insufficient_quota", "code": "insufficient_quota"}
            self.send_json(429, {"error": error})
            return
        elif model == "malformed-json":
            self.send_bytes(200, b'{"choices": [{"message": {"content": "trunc', "application/json")
            return
        elif model == "crash":
            self.crash()
            return
        elif model == "html":
            self.send_bytes(200, b"<html><body>Bad gateway</body></html>", "text/html")
            return
        reply = answer(body)
        self.send_json(200, reply, self.server.served(reply))

    def crash(self) -> None:
        self.cut_body(b'{"choices": [')


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__, 8001)
    parser.add_argument("--key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--fault-rate", action="append", default=[], metavar="KIND=RATE",
                        help="inject a fault at this rate, repeatable: 429, 5xx, quota, stall, drop (e.g. 429=0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault and right-answer draws")
    parser.add_argument("--stall-s", type=float, default=2.0, help="how long a stall holds its answer")
    parser.add_argument("--serve-model", default=None, metavar="NAME",
                        help="answer 'model: NAME' whatever model was asked (a provider swapping models)")
    parser.add_argument("--system-fingerprint", default=None, metavar="FP", help="add 'system_fingerprint: FP'")
    args = parser.parse_args(argv)
    try:
        rates = dict(parse_rate(text) for text in args.fault_rate)
        chaos = Chaos(rates, args.seed, args.stall_s)
    except ValueError as exc:
        parser.error(str(exc))
    server = ChatServer((args.host, args.port), key=args.key, verbose=args.verbose, chaos=chaos,
                        serve_model=args.serve_model, system_fingerprint=args.system_fingerprint)
    print("openai_server.py: for rehearsals only (tests, demos, chaos drills), never production traffic",
          flush=True)
    serve(server, "OpenAI-compatible server")


if __name__ == "__main__":
    main()
