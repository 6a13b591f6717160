"""Fleet control (SPEC 13): shared rate limits, budgets, usage and cost, caches.

The parts, each in its own module; the pure ones import neither celery nor redis, so reports
and statistics may use them:

    specs          --rate-limit / rate_limit grammar, which limit applies to which key   (pure)
    ratestate      one key's algorithm: pause, leases, GCRA, token bucket, AIMD          (pure)
    limiter        RateLimiter: the transport's CallLimiter seam over a backend          (pure)
    local_rates    the in-process backend
    redis_rates    the fleet-wide backend: the same algorithm in Lua
    usage          Usage, parsing providers' usage, totals                               (pure)
    prices         the price table and costs                                             (pure)
    budget         --budget / --max-tokens reservations: in-process backend              (pure)
    redis_budget   the same, shared by every worker of a sweep
    control        FleetLimiter: budget + rate limits + usage meter behind one CallLimiter (pure)
    quota          reading "insufficient quota" answers                                  (pure)
    judge_cache    judge verdicts by (judge, criteria, input, normalised output)        (memory)
    redis_judge_cache  the same in Redis
    replay         --record / --replay of agent, judge and simulator calls
    plan           FleetFlags (the flags as given) and FleetPlan (resolved, in the SweepPlan)  (pure)
    keys           plan_fleet: the sweep's keys, their prices and declared limits, checked   (pure)
    runtime        FleetRuntime: one sweep in one process; hooks, a scope per run, costs     (pure)
    redis_runtime  the same on workers: Redis backends, decided cases, the budget spent

``farm.stats.adaptive`` holds the adaptive-runs rules (curtailment, SPRT); ``farm.stats.costs``
sums usage and cost per case and sweep; ``farm.reports.fleet`` says how reports show them.
"""
