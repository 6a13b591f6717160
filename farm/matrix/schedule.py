"""A matrix sweep's cases and the order of its runs (SPEC 22).

A matrix plans each case once per arm, the copies side by side (``arm_copies``), so the plan's
cases come in groups of one copy per arm. Runs are interleaved in time: per group, round ``r``
makes run ``r`` of every arm, the arms in an order drawn for that group and round from ``seed``,
so a provider that drifts, throttles or slows down during the sweep does so for every arm alike.
Both executors take their runs in this order: the in-process one (``farm.sweep.local``) and the
publisher of a distributed sweep (``farm.distributed.delivery.publish.run_slots``), which also
resumes it from a flat position (the publish cursor).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from farm.models import Arm, Case, arm_case_id

T = TypeVar("T")


def arm_copies(case: Case, arms: Sequence[Arm]) -> list[tuple[Case, Arm]]:
    """``case`` as each arm runs it: its id ``T1@ARM``, ``arm`` set, the arm's options beside its own."""
    return [(case.model_copy(update={"id": arm_case_id(case.id, arm.name), "arm": arm.name,
                                     "arm_options": dict(arm.options) or None}), arm) for arm in arms]


def round_orders(seed: int, group: int, arms: int) -> Iterator[list[int]]:
    """The arms' order (indexes) in each round of group ``group``, round 1 first: shuffles drawn one
    after another from a generator seeded by (``seed``, ``group``): one seeding per case (15 µs),
    not one per round, and any group's order is made again from the seed alone."""
    rng = random.Random(f"{seed}:{group}")
    while True:
        order = list(range(arms))
        rng.shuffle(order)
        yield order


def round_order(seed: int, group: int, round_: int, arms: int) -> list[int]:
    """The arms' order in round ``round_`` (1-based) of group ``group``."""
    return next(itertools.islice(round_orders(seed, group, arms), round_ - 1, None))


def group_runs(runs: Sequence[int], group: int, seed: int) -> Iterator[tuple[int, int]]:
    """(index in the group, run number) of group ``group``'s runs, round by round: round ``r``
    makes run ``r`` of each item that has one, in the round's seeded order."""
    orders = round_orders(seed, group, len(runs))
    for round_ in range(1, max(runs, default=0) + 1):
        for i in next(orders):
            if round_ <= runs[i]:
                yield i, round_


def interleaved(items: Iterable[T], runs_of: Callable[[T], int], arms: int, seed: int, start: int = 0
                ) -> Iterator[tuple[T, int]]:
    """(item, run number) of every run, round by round within each group of ``arms`` items, from
    flat position ``start`` (the runs before it are skipped, the order unchanged)."""
    position, source = 0, iter(items)
    for group_index in itertools.count():
        group = list(itertools.islice(source, arms))
        if not group:
            return
        runs = [runs_of(item) for item in group]
        if position + sum(runs) <= start:
            position += sum(runs)
            continue
        skip, position = max(0, start - position), position + sum(runs)
        for i, run in itertools.islice(group_runs(runs, group_index, seed), skip, None):
            yield group[i], run


def made_before(items: Sequence[T], runs_of: Callable[[T], int], arms: int, seed: int, cursor: int) -> list[int]:
    """How many runs of each item come before flat position ``cursor`` in ``interleaved``'s order
    (runs 1..count of each: a round makes run ``r`` of every arm); a group wholly before or after
    the cursor is counted without walking it."""
    counts: list[int] = []
    position = 0
    for start in range(0, len(items), arms):
        runs = [runs_of(item) for item in items[start:start + arms]]
        total = sum(runs)
        if position + total <= cursor:
            counts += runs
        elif position >= cursor:
            counts += [0] * len(runs)
        else:
            made = [0] * len(runs)
            for i, _ in itertools.islice(group_runs(runs, start // arms, seed), cursor - position):
                made[i] += 1
            counts += made
        position += total
    return counts


__all__ = ["arm_copies", "group_runs", "interleaved", "made_before", "round_order", "round_orders"]
