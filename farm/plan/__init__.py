"""A sweep's plan as data: the ``SweepPlan``, batch planning, the per-core loader, compact case storage and its
codec, Yao's options, and fleet control as declared (rate-limit specs, keys, budgets as data).
"""
