"""When a worker for one sweep stops (``farm.distributed.sweep_idle.IdleWatch``), on a scripted
sequence of sweep states and a clock that advances one second a look: no broker needed."""

from __future__ import annotations

from collections.abc import Iterator

from farm.distributed.sweep_idle import IdleWatch, SweepActivity

BUSY = SweepActivity(finished=False, busy="3 runs in flight")
IDLE = SweepActivity(finished=False, busy=None)
DONE = SweepActivity(finished=True, busy=None)
UNKNOWN = SweepActivity(finished=False, busy=None, known=False)


def _watch(states: list[SweepActivity], idle_s: float) -> tuple[list[str], int, list[str]]:
    """(why it stopped, how many looks it took, what happened in order)."""
    feed: Iterator[SweepActivity] = iter(states)
    looks, events, now = 0, [], [0.0]

    def read() -> SweepActivity:
        nonlocal looks
        looks += 1
        return next(feed)

    def sleep(seconds: float) -> None:
        now[0] += 1.0

    stopped: list[str] = []
    watch = IdleWatch(read, idle_s, lambda why: (stopped.append(why), events.append("stop")),
                      finished=lambda: events.append("forget"), clock=lambda: now[0], sleep=sleep)
    watch.run()
    return stopped, looks, events


def test_a_finished_sweep_stops_the_worker_at_once_after_forgetting_its_queue():
    stopped, looks, events = _watch([BUSY, DONE], idle_s=30)
    assert stopped == ["the sweep is finished"] and looks == 2 and events == ["forget", "stop"]


def test_idle_must_last_the_whole_span_and_any_busy_look_starts_it_again():
    states = [IDLE, IDLE, BUSY, IDLE, IDLE, IDLE, IDLE]  # idle since t=3: 3 s on end at the 7th look
    stopped, looks, events = _watch(states, idle_s=3)
    assert stopped == ["nothing queued or in flight for 3s"] and looks == 7 and events == ["stop"]


def test_a_sweep_the_store_does_not_know_counts_as_idle():
    stopped, looks, _ = _watch([UNKNOWN] * 5, idle_s=2)
    assert stopped and looks == 3


def test_a_failed_read_is_not_idle():
    looks: list[SweepActivity | None] = [IDLE, None, IDLE, IDLE, IDLE, IDLE]
    now, seen = [0.0], []

    def read() -> SweepActivity:
        state = looks[len(seen)]
        seen.append(state)
        if state is None:
            raise ConnectionError("redis away")
        return state

    stopped: list[str] = []
    IdleWatch(read, 1.5, stopped.append, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + 1)).run()
    assert stopped and len(seen) == 5  # idle counted again from the look after the failure (else: 3 looks)
