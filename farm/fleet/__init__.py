"""Fleet control (SPEC 13): shared rate limits, budgets, usage and cost, caches.

Enforcement in one process, each part in its own module (none imports celery or redis):

    ratestate      one key's algorithm: pause, leases, GCRA, token bucket, AIMD
    limiter        RateLimiter: the transport's CallLimiter seam over a backend
    local_rates    the in-process backend
    budget         --budget / --max-tokens reservations: in-process backend
    control        FleetLimiter: budget + rate limits + usage meter behind one CallLimiter
    quota          reading "insufficient quota" answers
    judge_cache    judge verdicts by (judge, criteria, input, normalised output), in memory
    replay         --record / --replay of agent, judge and simulator calls
    runtime        FleetRuntime: one sweep in one process; hooks, a scope per run, costs

What a sweep declares lives with its plan: ``farm.plan.rate_specs`` (the --rate-limit grammar,
which limit applies to which key, ``fleet_name``), ``farm.plan.fleet`` (FleetFlags, FleetPlan),
``farm.fleet.keys`` (plan_fleet: the sweep's keys, prices and declared limits). Usage is data
(``farm.models.usage``), prices are statistics (``farm.stats.prices``). The same parts shared by
every worker through Redis are behind the wall, in ``farm.distributed.fleet`` (rates, budget,
judge cache, the workers' runtime).

``farm.stats.adaptive`` holds the adaptive-runs rules (curtailment, SPRT); ``farm.stats.costs``
sums usage and cost per case and sweep; ``farm.reports.fleet`` says how reports show them.
"""
