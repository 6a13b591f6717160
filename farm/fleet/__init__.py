"""Fleet control (SPEC 13): shared rate limits, budgets, usage and cost, caches.

Fleet control has four homes, one per floor of the package (a folder imports only the floors
below it, ``tests/project/test_layout.py``); each holds what its floor may know:

    farm/agents/limiter.py   the seam the transport calls: ``CallLimiter``/``CallLease`` for every
    farm/agents/quota.py     HTTP attempt, ``refused`` for a refused call; reading "insufficient
                             quota" answers. Below fleet control: the agents know no fleet, fleet
                             control plugs into them (``AgentHooks.limiter``, ``REFUSAL_NOTE``)
    farm/plan/fleet.py       what a sweep declares, as data its plan carries to every worker:
    farm/plan/rate_specs.py  ``FleetFlags``, ``FleetPlan``, ``BudgetLimit``, ``ReplayMode``, the
                             --rate-limit grammar and which limit applies to which key
    farm/fleet/ (here)       enforcement in one process: it builds on the plan (the runtime takes
                             the ``SweepPlan``) and on the agents it wraps
    farm/distributed/fleet/  the same parts shared by every worker through Redis, behind the wall

Here, each part in its own module (none imports celery or redis):

    keys           plan_fleet: the sweep's keys, prices and declared limits checked, its FleetPlan
    ratestate      one key's algorithm: pause, leases, GCRA, token bucket, AIMD
    limiter        RateLimiter: the transport's CallLimiter seam over a backend
    local_rates    the in-process backend
    budget         --budget / --max-tokens reservations: in-process backend
    control        FleetLimiter: budget + rate limits + usage meter behind one CallLimiter; a run's
                   scope, where a refused call is noted
    invocations    python and command agents held to their key's limits
    judge_cache    judge verdicts by (judge, criteria, input, normalised output), in memory
    replay         --record / --replay of agent, judge and simulator calls (loaded for them only)
    digests        digest_of: a JSON value's canonical sha256 (the runtime's and the recorder's)
    runtime        FleetRuntime: one sweep in one process; hooks, a scope per run, costs

A run's clock of the time its calls queued is the run's (``farm.run.waiting``); usage is data
(``farm.models.usage``), prices are statistics (``farm.stats.prices``); ``farm.stats.adaptive``
holds the adaptive-runs rules (curtailment, SPRT); ``farm.stats.costs`` sums usage and cost per
case and sweep; ``farm.reports.fleet`` says how reports show them.
"""
