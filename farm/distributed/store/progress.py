"""The progress half of ``farm.distributed.store.sweep_store.SweepStore``: how far the sweeps in
flight are, as ``farm status`` and the tests read it. Runs stored are not counted on their own:
the sweep's settled counter minus its dropped counter (issue 32: one counter a run, not two).
"""

from __future__ import annotations

from typing import Any

from farm.distributed.store import keys
from farm.distributed.store.answers import SweepProgress


class ProgressStore:
    """Progress reads; ``SweepStore`` provides ``client``."""

    client: Any

    def runs_done(self, sweep_id: str) -> int:
        """Runs of the sweep stored (settled minus dropped)."""
        settled, dropped = self.client.mget([keys.settled_count_key(sweep_id), keys.dropped_key(sweep_id)])
        return int(settled or 0) - int(dropped or 0)

    def in_flight(self) -> list[SweepProgress]:
        """Sweeps submitted and not finished, oldest first, with their progress."""
        ids = self.client.zrange(keys.SWEEPS_IN_FLIGHT, 0, -1, withscores=True)
        pipe = self.client.pipeline(transaction=False)
        for sid, _score in ids:
            pipe.hmget(keys.sweep_key(sid), ["total_cases", "total_runs", "queue", "agent_id"])
            pipe.get(keys.settled_count_key(sid))
            pipe.get(keys.dropped_key(sid))
            pipe.scard(keys.cases_done_key(sid))
            pipe.get(keys.stop_key(sid))
            pipe.get(keys.published_key(sid))
            pipe.exists(keys.publisher_key(sid))
        replies = pipe.execute()
        out = []
        for i, (sid, score) in enumerate(ids):
            (cases, runs, queue, agent), settled, dropped, cdone, stop, published, publisher = replies[7 * i:7 * i + 7]
            done = int(settled or 0) - int(dropped or 0)
            if cases is None:  # expired or flushed: forget it
                self.client.zrem(keys.SWEEPS_IN_FLIGHT, sid)
                continue
            out.append(SweepProgress(sid, float(score), agent or "", queue or "", done, int(runs or 0),
                                     int(cdone or 0), int(cases), stop,
                                     None if published is None else int(published), bool(publisher)))
        return out


__all__ = ["ProgressStore"]
