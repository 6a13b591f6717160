"""The plan's half of ``farm.distributed.store.sweep_store.SweepStore``: a sweep's plan, its cases (deflated with the
sweep's dictionary, ``farm.plan.case_codec``) and their index in plan order (``CaseSlot``: id, runs,
timeout), which is both the report's case order and what publishing reads.

Written by the submitter in one pipelined pass (the cases packed here and sent every few thousand,
so its buffer stays bounded: ``farm.distributed.store.packed``), the publish cursor last; read by
the workers, one case or one chunk at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from farm.distributed.store import keys
from farm.distributed.store.packed import PackedSender, command
from farm.models import SweepStart
from farm.plan.case_codec import CaseCodec
from farm.plan.compact_cases import CompactCases, compact
from farm.plan.sweep_plan import CaseSlot, PlannedCase, SweepPlan


def _plan_keys(sid: str) -> tuple[str, str, str]:
    """The keys that hold a sweep's plan: the sweep hash, its cases, its index."""
    return keys.sweep_key(sid), keys.cases_key(sid), keys.index_key(sid)


class PlanStore:
    """Plan reads and writes; ``SweepStore`` provides ``client``, ``ttl`` and ``_codecs``."""

    client: Any
    ttl: int
    _codecs: dict[str, CaseCodec]

    def save_sweep(self, plan: SweepPlan, submitted_epoch: float, *, chunk: int = 500,
                   publisher: tuple[str, int] | None = None) -> None:
        """Store the plan (each case on its own), register the sweep as in flight, open its stream.

        ``publisher`` (token, lease in ms) is taken first; the publish cursor (0) is written last,
        so a sweep without a cursor is one whose plan was never stored whole (``farm.distributed.delivery``).
        """
        sid = plan.sweep_id
        cases = compact(plan.cases, plan.env)
        pipe = self.client.pipeline(transaction=False)
        if publisher is not None:
            pipe.set(keys.publisher_key(sid), publisher[0], px=max(1, publisher[1]))
        pipe.hset(keys.sweep_key(sid), mapping={
            "plan": plan.model_dump_json(), "total_cases": plan.total_cases, "total_runs": plan.total_runs,
            "submitted_at": submitted_epoch, "queue": plan.queue, "agent_id": plan.agent_label,
            "zdict": cases.codec.text(), **({"bundle": plan.bundle.sha256} if plan.bundle else {}),
        })
        pipe.expire(keys.sweep_key(sid), self.ttl)
        pipe.execute()  # the publisher's lease and the sweep first, then its cases
        self._save_cases(sid, cases, chunk)
        start = SweepStart(sweep_id=sid, agent_id=plan.agent_label, total_cases=plan.total_cases,
                           total_runs=plan.total_runs, timestamp=plan.started_at)
        pipe.xadd(keys.stream_key(sid), {"type": "start", "data": start.model_dump_json()})
        for key in (*_plan_keys(sid), keys.stream_key(sid)):
            pipe.expire(key, self.ttl)
        pipe.zadd(keys.SWEEPS_IN_FLIGHT, {sid: submitted_epoch})
        pipe.set(keys.activity_key(sid), submitted_epoch, ex=self.ttl)
        # the running and stats hashes, with their TTL, once per sweep: the sentinel field keeps
        # each (and its TTL) as markers come and go, so beginning a run is one HSETNX and storing a
        # case's stats no EXPIRE (``farm.distributed.store.lua``)
        for key in (keys.running_key(sid), keys.stats_key(sid)):
            pipe.hset(key, keys.SENTINEL, "0")
            pipe.expire(key, self.ttl)
        pipe.set(keys.published_key(sid), 0, ex=self.ttl)
        pipe.execute()

    def _save_cases(self, sid: str, cases: CompactCases, chunk: int) -> None:
        """The cases and their index, ``chunk`` cases a command, 20 chunks a batch packed here
        (``farm.distributed.store.packed``): the submitter's buffer stays bounded, and what is sent
        expires even if this submitter dies before the end."""
        cases_key, index_key = keys.cases_key(sid).encode(), keys.index_key(sid).encode()
        plan_keys = _plan_keys(sid)
        expire = b"".join(command([b"EXPIRE", key.encode(), b"%d" % self.ttl]) for key in plan_keys)
        lines, stored = iter(cases.slot_lines), iter(cases.stored)
        with PackedSender(self.client) as sender:
            for first in range(0, len(cases), chunk * 20):
                payload: list[bytes] = []
                for _ in range(first, min(first + chunk * 20, len(cases)), chunk):
                    slot_lines = [line.encode() for line in itertools.islice(lines, chunk)]
                    fields = [b"HSET", cases_key]
                    for line, text in zip(slot_lines, itertools.islice(stored, chunk), strict=True):
                        fields += (line.split(b" ", 2)[2], text.encode())
                    payload += (command(fields), command([b"RPUSH", index_key, *slot_lines]))
                sender.send(b"".join([*payload, expire]), len(payload) + len(plan_keys))

    def load_sweep(self, sweep_id: str) -> SweepPlan | None:
        """The sweep-wide plan (``cases`` left empty: read them one by one with ``load_case``)."""
        text = self.client.hget(keys.sweep_key(sweep_id), "plan")
        return None if text is None else SweepPlan.model_validate_json(str(text))

    def submitted_epoch(self, sweep_id: str) -> float:
        return float(self.client.hget(keys.sweep_key(sweep_id), "submitted_at") or 0.0)

    def load_case(self, sweep_id: str, case_id: str) -> PlannedCase | None:
        return next(self.load_cases(sweep_id, [case_id]), None)

    def load_cases(self, sweep_id: str, case_ids: Sequence[str], *, chunk: int = 500) -> Iterator[PlannedCase]:
        """The stored cases of ``case_ids``, in that order, ``chunk`` a round trip (missing ones left out)."""
        codec = self._codec(sweep_id)
        for first in range(0, len(case_ids), chunk):
            for text in self.client.hmget(keys.cases_key(sweep_id), list(case_ids[first:first + chunk])):
                if text is not None:
                    yield PlannedCase.model_validate_json(codec.decode(str(text)))

    def _codec(self, sweep_id: str) -> CaseCodec:
        """The sweep's case dictionary (``farm.plan.case_codec``), read once per sweep."""
        codec = self._codecs.get(sweep_id)
        if codec is None:
            text = self.client.hget(keys.sweep_key(sweep_id), "zdict")
            codec = CaseCodec.from_text(str(text or ""))
            if text is not None:  # not stored (yet, or gone): not remembered
                if len(self._codecs) >= 64:
                    self._codecs.clear()
                self._codecs[sweep_id] = codec
        return codec

    def plan_slots(self, sweep_id: str) -> list[CaseSlot]:
        """The sweep's index (``CaseSlot``), in plan order."""
        return [CaseSlot.decode(str(text)) for text in self.client.lrange(keys.index_key(sweep_id), 0, -1)]

    def case_ids(self, sweep_id: str) -> list[str]:
        """The sweep's case ids in plan order (from its index)."""
        return [slot.id for slot in self.plan_slots(sweep_id)]

    def exists(self, sweep_id: str) -> bool:
        return bool(self.client.exists(keys.sweep_key(sweep_id)))


__all__ = ["PlanStore"]
