"""Judge verdicts shared by every worker (``farm:judge-cache:{digest}``), with single flight.

A key holds either a verdict (JSON, kept ``FARM_RESULT_TTL``) or, while one caller asks the
judge, that caller's claim (expiring after ``claim_ttl_s``, so a caller that dies frees it).
Others poll until the verdict appears or the claim goes away.
"""

from __future__ import annotations

import asyncio
import json
import uuid

from farm.checks.base import JudgeVerdict
from farm.distributed.fleet.client import LoopClients
from farm.distributed.store import keys
from farm.distributed.store.lua import RELEASE_LUA, lua_script
from farm.settings import DEFAULT_RESULT_TTL_S

CLAIM = "claim:"
POLL_S = 0.1
DEFAULT_CLAIM_TTL_S = 180.0
"""Longest a judge call may take before another caller asks instead."""

LOOKUP_OR_CLAIM_LUA = lua_script("farm.distributed.fleet", "judge_claim.lua")
"""The verdict found, or the right to ask the judge claimed (single flight)."""


class RedisVerdictCache:
    """The fleet's verdict cache in Redis."""

    def __init__(self, url: str, *, clients: LoopClients | None = None, ttl_s: int | None = None,
                 claim_ttl_s: float = DEFAULT_CLAIM_TTL_S) -> None:
        self.clients = clients or LoopClients(url)
        self.ttl_s = ttl_s or DEFAULT_RESULT_TTL_S
        self.claim_ttl_ms = int(claim_ttl_s * 1000)
        self.claim = f"{CLAIM}{uuid.uuid4().hex}"
        """This cache's claims (one per process is enough: a key has one owner at a time)."""

    async def lookup_or_claim(self, key: str) -> JudgeVerdict | None:
        while True:
            found = await self.clients.run_script(LOOKUP_OR_CLAIM_LUA, [keys.judge_cache_key(key)],
                                                  [self.claim, self.claim_ttl_ms])
            if found is None:
                return None
            if not str(found).startswith(CLAIM):
                data = json.loads(found)
                return JudgeVerdict(data["verdict"], data.get("reason", ""))
            await asyncio.sleep(POLL_S)

    async def store(self, key: str, verdict: JudgeVerdict) -> None:
        value = json.dumps({"verdict": verdict.verdict, "reason": verdict.reason})
        client = self.clients.client()
        await self.clients.call(lambda: client.set(keys.judge_cache_key(key), value, ex=self.ttl_s))

    async def abandon(self, key: str) -> None:
        await self.clients.run_script(RELEASE_LUA, [keys.judge_cache_key(key)], [self.claim])

    async def aclose(self) -> None:
        await self.clients.aclose()
