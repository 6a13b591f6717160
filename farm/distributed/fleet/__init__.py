"""Fleet control shared by every worker of a sweep through Redis: rate limits, budgets, the judge cache, the
workers' runtime.
"""
