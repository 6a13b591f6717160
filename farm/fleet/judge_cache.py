"""Judge verdicts cached by (judge, criteria, input, normalised output) (SPEC 13).

A stable case run 50 times gives 50 identical outputs: ``CachedJudge`` asks its judge once and
serves the other 49 from the cache. Callers that ask for the same verdict at the same time wait
for the first one's answer instead of asking too (single flight). Only ``pass`` and ``fail``
are kept: an ``error`` verdict (a failed call) or an ``equivocal`` one is asked again by the
next caller.

A repeat of ``--confirm-failures`` (``JUDGE_REPEAT`` above 0) is asked of the judge every time,
never looked up nor stored: it exists to hear the judge again.

Judges are asked about *outputs*, not runs, so no run index is in the key; agent calls are
never cached this way (see ``farm.fleet.replay``). ``MemoryVerdictCache`` serves one process;
``farm.distributed.fleet.judge_cache`` every worker of the fleet.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import threading
from collections import OrderedDict
from contextvars import ContextVar
from typing import Protocol

from farm.agents.secrets import redact
from farm.checks.base import JUDGE_REPEAT, Judge, JudgeVerdict
from farm.models import JsonValue
from farm.stats.outputs import normalise_output

ARM_SCOPE: ContextVar[str] = ContextVar("farm_judge_arm_scope", default="")
"""A matrix sweep's run: its arm's agent, connector and options (``agent_ref_key``), part of every
verdict key it makes, so two arms never share a verdict (SPEC 22); '' elsewhere (keys as before).
Set for the run by ``farm.fleet.runtime.FleetRuntime.run``."""
KEY_VERSION = 1
"""Part of every key: bump it when what a judge is asked changes (prompt, message layout)."""
DEFAULT_MAX_ENTRIES = 100_000


def verdict_key(judge_id: str, criterion: str, input: JsonValue, output: JsonValue) -> str:
    """The cache key: a digest, so no output or input text (nor any secret in them) is stored in it."""
    parts = [KEY_VERSION, judge_id, criterion, json.dumps(input, sort_keys=True, ensure_ascii=False, default=str),
             isinstance(output, str), normalise_output(output)]
    if scope := ARM_SCOPE.get():
        parts.append(scope)
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


class VerdictCache(Protocol):
    """Where verdicts are kept; ``lookup_or_claim`` is the single-flight step."""

    async def lookup_or_claim(self, key: str) -> JudgeVerdict | None:
        """The cached verdict; else None, and the caller now owns the question: it must
        ``store`` a verdict or ``abandon`` it. Waits while another caller owns it."""
        ...

    async def store(self, key: str, verdict: JudgeVerdict) -> None: ...

    async def abandon(self, key: str) -> None: ...


class CachedJudge:
    """A ``Judge`` that asks ``inner`` once per distinct (criteria, input, normalised output)."""

    def __init__(self, inner: Judge, judge_id: str, cache: VerdictCache) -> None:
        self.inner = inner
        self.judge_id = judge_id
        self.cache = cache

    async def judge(self, *, criterion: str, actual: JsonValue, input: JsonValue) -> JudgeVerdict:
        if JUDGE_REPEAT.get():
            return await self.inner.judge(criterion=criterion, actual=actual, input=input)
        key = verdict_key(self.judge_id, criterion, input, actual)
        found = await self.cache.lookup_or_claim(key)
        if found is not None:
            return found
        try:
            verdict = await self.inner.judge(criterion=criterion, actual=actual, input=input)
        except BaseException:
            await self.cache.abandon(key)
            raise
        if verdict.verdict in ("equivocal", "error"):
            await self.cache.abandon(key)
        else:
            await self.cache.store(key, JudgeVerdict(verdict.verdict, redact(verdict.reason)))
        return verdict


class MemoryVerdictCache:
    """Verdicts in this process (thread-safe, any event loop), the oldest dropped past ``max_entries``."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._verdicts: OrderedDict[str, JudgeVerdict] = OrderedDict()
        self._claims: dict[str, concurrent.futures.Future[None]] = {}

    async def lookup_or_claim(self, key: str) -> JudgeVerdict | None:
        while True:
            with self._lock:
                if key in self._verdicts:
                    self._verdicts.move_to_end(key)
                    return self._verdicts[key]
                claim = self._claims.get(key)
                if claim is None:
                    self._claims[key] = concurrent.futures.Future()
                    return None
            await asyncio.wrap_future(claim)  # a future of another thread's loop is fine

    async def store(self, key: str, verdict: JudgeVerdict) -> None:
        with self._lock:
            self._verdicts[key] = verdict
            self._verdicts.move_to_end(key)
            while len(self._verdicts) > self.max_entries:
                self._verdicts.popitem(last=False)
        self._finish(key)

    async def abandon(self, key: str) -> None:
        self._finish(key)

    def _finish(self, key: str) -> None:
        with self._lock:
            claim = self._claims.pop(key, None)
        if claim is not None:
            claim.set_result(None)
