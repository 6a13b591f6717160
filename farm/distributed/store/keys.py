"""Every Redis key and TTL of the farm, in one place (arq ``constants.py`` style).

A sweep's data lives under ``farm:sweep:{id}``; the submitter writes the plan once, workers
write one key per run (set-if-absent, so a redelivered run counts once) and append events to
the sweep's stream, which the submitter and ``farm results`` read.

    farm:sweep:{id}                 hash: plan (the JSON of the sweep-wide settings), total_cases,
                                    total_runs, submitted_at, queue, agent_id
    farm:sweep:{id}:cases           hash: case id → PlannedCase JSON ({"case", "plan", "agent"})
    farm:sweep:{id}:index           list: "runs timeout id" per case in plan order (the report's
                                    order and publishing's index: ``farm.plan.sweep_plan.CaseSlot``)
    farm:sweep:{id}:run:{case}:{n}  string: the full RunResult JSON of run n (SET NX)
    farm:sweep:{id}:stats           hash: case id → CaseStats JSON (HSETNX); made with the plan (its
                                    TTL set once) with the sentinel field ``SENTINEL``
    farm:sweep:{id}:cases-done      set: case ids aggregated; SCARD is the sweep's done-counter
    farm:sweep:{id}:dropped         counter: runs settled without being stored (runs stored, the
                                    progress ``farm status`` shows, = settled-count minus this)
    farm:sweep:{id}:barrier:{case}  bitfield: u32 counters of the case's runs settled (#0), counted
                                    (#1, stored) and passed (#2, for fail-fast), then bit 96 + n set
                                    once run n is stored or dropped (the barrier)
    farm:sweep:{id}:events          stream: start, result, case, finish, stopped events
    farm:sweep:{id}:report          string: the SweepReport JSON (SET NX)
    farm:sweep:{id}:report-latch    string: set-if-absent guard around enqueuing farm.report
    farm:sweep:{id}:stop            string: why runs not started yet are dropped (cancel, fail-fast)
    farm:sweep:{id}:budget          hash: the sweep's budget: reserved and spent USD and tokens, the
                                    dearest call per limit key
    farm:sweep:{id}:budget-probe:{key} string: the call probing a limit key's cost (expires)
    farm:sweep:{id}:published       counter: the publish cursor, runs published in plan order
                                    (present once the whole plan is stored)
    farm:sweep:{id}:publisher       string: the publisher's lease (a token, expiring unless renewed)
    farm:sweep:{id}:reconciler      string: the reconciler's lease (one worker at a time per sweep)
    farm:sweep:{id}:running         hash: "{case}:{run}" → marker of a run a worker began and has not
                                    settled: {"t": epoch begun, "h": holder token, "d": deaths};
                                    made with the plan (its TTL set once) with the sentinel field
                                    ``SENTINEL`` so that it never empties
    farm:sweep:{id}:attempts        hash: "{case}:{run}" → publications of the run (1 = first) and
                                    "{case}:{run}@" → epoch of its last republication
    farm:sweep:{id}:activity        string: epoch of the sweep's last sign of life written on its own
                                    (submitted, a batch published, a run dropped); a run started
                                    (its marker) or stored (its stream entry) is one too, read
                                    from there (``SweepStore.last_activity``)
    farm:sweep:{id}:settled-count   counter: runs settled (stored or dropped), each once
    farm:worker-alive:{token}       string: a worker process's heartbeat (expires when it dies)
    farm:sweeps                     sorted set: sweeps in flight, scored by submit time

Fleet control (``farm.fleet``) shares its state between sweeps, since providers limit per API
key, not per sweep; a limit key's name appears as is when it is a plain name, else as a digest
(a URL may carry credentials):

    farm:fleet:limit:{name}         hash: one rate-limit key's state (GCRA, tokens, AIMD, pause, quota)
    farm:fleet:leases:{name}        sorted set: the key's calls in flight, scored by lease expiry
    farm:judge-cache:{digest}       string: a judge verdict (JSON) or a claim while it is being asked
"""

from __future__ import annotations

from farm.plan.rate_specs import fleet_name

PREFIX = "farm:"

REPORT_LATCH_TTL_S = 120
"""The report latch expires, so an aggregate that failed to enqueue the report can try again."""


def report_latch_ttl(visibility_timeout_s: int) -> int:
    """The latch's lifetime: at most half the visibility timeout, so a redelivered aggregate
    (which comes back after the visibility timeout) always finds it gone."""
    return max(1, min(REPORT_LATCH_TTL_S, visibility_timeout_s // 2))

SWEEPS_IN_FLIGHT = f"{PREFIX}sweeps"
"""Sorted set of sweep ids not finished yet, scored by submit time (epoch seconds)."""

STOP_CANCELLED = "cancelled"
"""Value of the stop key after ``farm cancel``."""


def sweep_key(sweep_id: str) -> str:
    return f"{PREFIX}sweep:{sweep_id}"


def cases_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:cases"


def index_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:index"


def run_key(sweep_id: str, case_id: str, run: int) -> str:
    return f"{sweep_key(sweep_id)}:run:{case_id}:{run}"


def stats_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:stats"


def cases_done_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:cases-done"


def dropped_key(sweep_id: str) -> str:
    """Runs of the sweep settled without being stored."""
    return f"{sweep_key(sweep_id)}:dropped"


def settled_key(sweep_id: str, case_id: str) -> str:
    return f"{sweep_key(sweep_id)}:barrier:{case_id}"


def stream_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:events"


def report_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:report"


def report_latch_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:report-latch"


def stop_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:stop"


def budget_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:budget"


def budget_probe_key(sweep_id: str, limit_key: str) -> str:
    """The claim of the one call probing a limit key's cost (``farm.fleet.budget.Budget.estimate``)."""
    return f"{budget_key(sweep_id)}-probe:{fleet_name(limit_key)}"


def decided_key(sweep_id: str) -> str:
    """Set of the cases an adaptive rule has decided: their runs not started yet are dropped."""
    return f"{sweep_key(sweep_id)}:decided"


def published_key(sweep_id: str) -> str:
    """The publish cursor: how many runs (in plan order, case by case) have been published."""
    return f"{sweep_key(sweep_id)}:published"


def publisher_key(sweep_id: str) -> str:
    """The publisher's lease: gone means the publisher vanished (or finished)."""
    return f"{sweep_key(sweep_id)}:publisher"


def reconciler_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:reconciler"


SENTINEL = ""
"""The field of the running and stats hashes that is no run's and no case's (empty: no case id
is): made with the plan, with the hash's TTL, it keeps the hash from emptying, so that TTL lasts
(no EXPIRE per run or per case)."""


def running_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:running"


def attempts_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:attempts"


def activity_key(sweep_id: str) -> str:
    return f"{sweep_key(sweep_id)}:activity"


def settled_count_key(sweep_id: str) -> str:
    """Runs of the sweep settled so far: the cursor minus this is what is queued or running."""
    return f"{sweep_key(sweep_id)}:settled-count"


def run_field(case_id: str, run: int) -> str:
    """A run's field in the ``running`` and ``attempts`` hashes."""
    return f"{case_id}:{run}"


def worker_alive_key(token: str) -> str:
    """A worker process's heartbeat: present while it lives (``workers.crashes``)."""
    return f"{PREFIX}worker-alive:{token}"


def sweep_keys(sweep_id: str) -> list[str]:
    """The sweep's fixed keys (run keys excluded: there is one per run)."""
    return [sweep_key(sweep_id), cases_key(sweep_id), stats_key(sweep_id),
            cases_done_key(sweep_id), dropped_key(sweep_id), stream_key(sweep_id),
            report_key(sweep_id), stop_key(sweep_id), budget_key(sweep_id),
            decided_key(sweep_id), published_key(sweep_id), publisher_key(sweep_id), reconciler_key(sweep_id),
            running_key(sweep_id), attempts_key(sweep_id), activity_key(sweep_id), settled_count_key(sweep_id),
            index_key(sweep_id)]


def lived_keys(sweep_id: str) -> list[str]:
    """The sweep's fixed keys that live as long as its data (``sweep_keys`` less its two leases,
    which expire on their own): what ``SweepStore.keep_alive`` gives a full TTL again."""
    leases = {publisher_key(sweep_id), reconciler_key(sweep_id)}
    return [key for key in sweep_keys(sweep_id) if key not in leases]


def fleet_limit_key(limit_key: str) -> str:
    return f"{PREFIX}fleet:limit:{fleet_name(limit_key)}"


def fleet_leases_key(limit_key: str) -> str:
    return f"{PREFIX}fleet:leases:{fleet_name(limit_key)}"


def bundle_key(sha256: str) -> str:
    """A bundle's bytes (``farm.bundles``), stored once for every sweep that names it."""
    return f"{PREFIX}bundle:{sha256}"


def judge_cache_key(digest: str) -> str:
    return f"{PREFIX}judge-cache:{digest}"
