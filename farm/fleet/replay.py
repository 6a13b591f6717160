"""``--record DIR`` / ``--replay DIR``: agent, judge and simulator calls kept on disk (SPEC 13).

Each call is keyed by (caller, config digest, case, run index, turn, history digest): the run
index is always part of an agent call's key, so 50 runs of a case are 50 recordings, never one
served 50 times. ``--record`` always calls and writes ``DIR/<caller kind>/<ab>/<digest>.json``
(atomically: workers on a shared disk may record the same sweep); ``--replay`` reads and never
calls, so a replayed sweep makes zero agent and judge calls and gives the recorded verdicts. A
call the record has no file for is an ``AgentError`` for its run, naming the case, run and turn.

What is written holds no secret: replies, requests and errors pass through
``farm.agents.secrets`` redaction, the caller's name is stored as its Redis-safe form, and the
history is a digest. A call that failed is recorded as its error and replayed as an
``AgentError`` with the same message; a call cut off by a timeout is not recorded (its replay
is then an error, which counts as failed like the timeout did).

The wrappers layer on without touching adapters: ``RecordReplayAgent`` wraps an ``Agent``
(the agent pool's wrapper hook), ``RecordReplayJudge`` a ``Judge``; the agent wrapper notes the
call site (case, run, turn) in a context variable, which the judge calls of the same turn,
made by ``execute`` right after, key by.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from farm.agents.base import Agent, AgentRequest
from farm.agents.secrets import redact, redact_reply, redact_value
from farm.checks.base import JUDGE_REPEAT, Judge, JudgeVerdict
from farm.errors import AgentError, FaultKind, FleetStop, SettingsError
from farm.fleet.digests import digest_of
from farm.models import JsonValue, Reply
from farm.plan.fleet import ReplayMode
from farm.plan.rate_specs import fleet_name

T = TypeVar("T")
FORMAT_VERSION = 2
"""2: a recording holds the sha256 of what it says (``checksum``). 1 (none) is refused: a file
edited to pass and marked version 1 could not be told from a genuine one."""
READ_VERSIONS = (FORMAT_VERSION,)
UNVERIFIABLE_VERSIONS = (1,)
RE_RECORD = "re-record it with --record (format version 1 has no checksum: it cannot be verified)"
CHECKSUM_FIRST = b'{"checksum": '
"""How every recording this farm writes begins (keys sorted): such a file needs no parse when
``--replay`` starts (its checksum is checked as it is replayed)."""


class ReplayIntegrityError(Exception):
    """A recording is not the call's (another call's key, an unknown version, an edited, truncated,
    deleted or malformed file): the run is an error of class ``harness:replay`` naming the file."""


@dataclass(frozen=True)
class CallKey:
    """What identifies one recorded call."""

    caller: str
    """``agent:<id>``, ``judge:<name>`` or ``simulator:<name>``."""
    config: str
    case_id: str
    run: int
    turn: int
    history: str

    def __post_init__(self) -> None:
        if self.caller.startswith("agent:") and self.run < 1:
            raise ValueError(f"an agent call's key needs its run index (≥ 1), got {self.run}")

    @property
    def kind(self) -> str:
        return self.caller.partition(":")[0] or "call"

    def digest(self) -> str:
        return digest_of(asdict(self))

    def describe(self) -> str:
        return f"{self.kind} call of case {self.case_id!r}, run {self.run}, turn {self.turn}"


@dataclass(frozen=True)
class CallSite:
    case_id: str
    run: int
    turn: int


_CALL_SITE: ContextVar[CallSite | None] = ContextVar("farm_replay_call_site", default=None)


class ReplayStore:
    """Recorded calls in a directory."""

    def __init__(self, directory: Path, mode: ReplayMode) -> None:
        self.directory = directory
        self.mode = mode

    @classmethod
    def open(cls, directory: str | Path, mode: ReplayMode) -> ReplayStore:
        """The store for ``--record DIR`` (created) or ``--replay DIR`` (must exist).

        Raises:
            SettingsError: the directory cannot be created, or there is nothing to replay.
        """
        path = Path(directory).expanduser()
        flag = f"--{mode.value} {directory}"
        if mode is ReplayMode.REPLAY and not path.is_dir():
            raise SettingsError(f"{flag}: no such directory (record a sweep into it with --record first)")
        if mode is ReplayMode.REPLAY:
            _refuse_unverifiable(path, flag)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SettingsError(f"{flag}: cannot create the directory: {exc}") from None
        return cls(path, mode)

    def path(self, key: CallKey) -> Path:
        digest = key.digest()
        return self.directory / key.kind / digest[:2] / f"{digest}.json"

    def load(self, key: CallKey) -> dict[str, Any]:
        """The recorded call, checked to be the one asked for (SPEC 15).

        Raises:
            ReplayIntegrityError: no such file, or one that is not this call's recording.
        """
        path = self.path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ReplayIntegrityError(f"--replay {self.directory}: no recording of the {key.describe()} "
                                       f"(expected {path})") from None
        except (OSError, ValueError) as exc:
            raise ReplayIntegrityError(f"{path}: unreadable recording of the {key.describe()}: {exc}") from None
        problem = _integrity_problem(data, key)
        if problem:
            raise ReplayIntegrityError(f"{path}: not the recording of the {key.describe()}: {problem}")
        return dict(data)

    def save(self, key: CallKey, request: JsonValue, outcome: dict[str, JsonValue]) -> None:
        """Write one call (``{"value": …}`` or ``{"error": …}``), secrets masked, atomically."""
        record: dict[str, Any] = {"version": FORMAT_VERSION, "key": stored_key(key),
                                  "request": redact_value(request), **redact_value(outcome)}
        record["checksum"] = _checksum(record)
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".rec-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(record, out, ensure_ascii=False, sort_keys=True)
        os.replace(temporary, target)

    async def call(self, key: CallKey, request: JsonValue, fn: Callable[[], Awaitable[T]],
                   encode: Callable[[T], JsonValue], decode: Callable[[Any], T]) -> T:
        """Replay: the recorded outcome. Record: call ``fn``, save what it gave or raised."""
        if self.mode is ReplayMode.REPLAY:
            data = self.load(key)
            if "error" in data:
                raise _recorded_error(data["error"])
            try:
                return decode(data["value"])
            except (ValueError, TypeError, KeyError) as exc:  # pydantic's ValidationError is a ValueError
                raise ReplayIntegrityError(f"{self.path(key)}: the recorded value of the {key.describe()} has "
                                           f"not the shape of one: {str(exc).splitlines()[0]}") from None
        try:
            result = await fn()
        except FleetStop:  # refused by fleet control (budget, quota): the run is not counted, nor recorded
            raise
        except Exception as exc:  # a failed call is part of the record: replayed as the same failure
            message = exc.message if isinstance(exc, AgentError) else (str(exc) or type(exc).__name__)
            kind = exc.kind if isinstance(exc, AgentError) else None  # a FaultKind is a str: JSON as it is
            self.save(key, request, {"error": {"type": type(exc).__name__, "message": redact(message), "kind": kind}})
            raise
        self.save(key, request, {"value": encode(result)})
        return result


def _refuse_unverifiable(directory: Path, flag: str) -> None:
    """SettingsError (exit 2, before any run) when ``directory`` holds recordings of a version
    without a checksum: replaying them would give whatever verdict an edit put in them."""
    found: list[Path] = []
    for path in directory.rglob("*.json"):
        try:
            with path.open("rb") as handle:
                if handle.read(len(CHECKSUM_FIRST)) == CHECKSUM_FIRST:
                    continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # unreadable or malformed: its run says so as it is replayed (harness:replay)
        if isinstance(data, dict) and data.get("version") in UNVERIFIABLE_VERSIONS:
            found.append(path)
    if found:
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        raise SettingsError(f"{flag}: {found[0]}{more}: a recording of format version 1 has no checksum, so an "
                            f"edited one cannot be told from a genuine one: re-record the sweep with --record")


def stored_key(key: CallKey) -> dict[str, Any]:
    """The key as a recording stores it: the caller in its Redis-safe form (``fleet_name``)."""
    return {**asdict(key), "caller": fleet_name(key.caller)}


def _checksum(record: dict[str, Any]) -> str:
    return digest_of({name: value for name, value in record.items() if name != "checksum"})


def _integrity_problem(data: Any, key: CallKey) -> str | None:
    """Why ``data`` is not the recording of ``key``; None when it is."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    version = data.get("version")
    if version in UNVERIFIABLE_VERSIONS:
        return RE_RECORD
    if version not in READ_VERSIONS:
        return f"version {version!r} (this farm reads {', '.join(map(str, READ_VERSIONS))}): record it again"
    if data.get("key") != stored_key(key):
        return "it holds another call's key (a file copied or moved over this one?)"
    if ("value" in data) == ("error" in data):
        return "it holds neither a value nor an error" if "value" not in data else "it holds a value and an error"
    if "error" in data and not isinstance(data["error"], dict):
        return "its error is not an object"
    if data.get("checksum") != _checksum(data):
        return "its checksum does not match what it holds (edited after it was recorded?)"
    return None


def _recorded_error(error: dict[str, Any]) -> AgentError:
    """The failure a recording holds, replayed with its kind (None in recordings made before kinds)."""
    try:
        kind: FaultKind | None = FaultKind(str(error.get("kind")))
    except ValueError:
        kind = None
    return AgentError(str(error.get("message", "recorded error")), kind=kind)


class RecordReplayAgent:
    """An ``Agent`` recorded to, or replayed from, a store (``inner`` is not called on replay)."""

    def __init__(self, inner: Agent, store: ReplayStore, config: str) -> None:
        self.inner = inner
        self.id = inner.id
        self.store = store
        self.config = config

    async def respond(self, request: AgentRequest) -> Reply:
        context = request.context
        site = CallSite(context.case_id, context.run, context.turn)
        _CALL_SITE.set(site)  # seen by this turn's judge calls, which execute makes in the same task
        sent = {"messages": request.messages, "sly_data": request.sly_data, "chat_filter": request.chat_filter,
                "context": context.model_dump(mode="json", exclude={"chat_id"})}
        key = CallKey(f"agent:{self.id}", self.config, site.case_id, site.run, site.turn, digest_of(sent))
        return await self.store.call(key, sent, lambda: self.inner.respond(request),
                                     lambda reply: redact_reply(reply).model_dump(mode="json"),
                                     Reply.model_validate)

    async def aclose(self) -> None:
        await self.inner.aclose()


class RecordReplayJudge:
    """A ``Judge`` recorded to, or replayed from, a store, keyed by the turn it judges."""

    def __init__(self, inner: Judge, store: ReplayStore, judge_id: str, config: str) -> None:
        self.inner = inner
        self.store = store
        self.judge_id = judge_id
        self.config = config

    async def judge(self, *, criterion: str, actual: JsonValue, input: JsonValue) -> JudgeVerdict:
        site = _CALL_SITE.get() or CallSite("", 0, 0)
        asked = {"criterion": criterion, "actual": actual, "input": input}
        repeat = JUDGE_REPEAT.get()
        if repeat:  # --confirm-failures: each repeat its own recording (first asks keep their old keys)
            asked["repeat"] = repeat
        key = CallKey(f"judge:{self.judge_id}", self.config, site.case_id, site.run, site.turn, digest_of(asked))
        return await self.store.call(
            key, asked, lambda: self.inner.judge(criterion=criterion, actual=actual, input=input),
            lambda verdict: {"verdict": verdict.verdict, "reason": verdict.reason},
            lambda data: JudgeVerdict(data["verdict"], data.get("reason", "")),
        )

