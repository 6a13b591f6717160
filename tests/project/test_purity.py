"""The pure core never imports celery, redis, workers or the history store's SQL stack (ARCHITECTURE rule 1)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CORE = ["farm.models", "farm.models.base", "farm.suites", "farm.checks", "farm.stats", "farm.reports",
        "farm.run.execute", "farm.run.dynamic", "farm.models.failure_class", "farm.sweep.deadlines",
        "farm.stats.compare", "farm.reports.comparison", "farm.reports.history_html", "farm.sweep.lifecycle",
        "farm.plan.sweep_plan", "farm.sweep.observers", "farm.settings", "farm.sweep.local", "farm.cli",
        "farm.stats.adaptive", "farm.fleet", "farm.plan.rate_specs", "farm.fleet.ratestate", "farm.fleet.limiter",
        "farm.fleet.local_rates", "farm.models.usage", "farm.stats.prices", "farm.fleet.budget",
        "farm.fleet.control", "farm.agents.quota", "farm.fleet.judge_cache", "farm.fleet.replay",
        "farm.plan.fleet", "farm.fleet.keys", "farm.fleet.runtime", "farm.stats.costs", "farm.reports.fleet",
        "farm.sweep.adaptive"]
"""farm.cli is here too: a ``farm test`` without --broker must start without Celery; of fleet control
only the ``redis_*`` modules may talk to Redis."""

FORBIDDEN = ("celery", "redis", "kombu", "workers", "sqlalchemy", "alembic", "psycopg")

PROBE = textwrap.dedent(
    """
    import importlib, json, sys
    for name in json.loads(sys.argv[1]):
        importlib.import_module(name)  # a missing core module is a failure, not a skip
    forbidden = tuple(json.loads(sys.argv[2]))
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in forbidden)))
    """
)


def _probe(modules: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, json.dumps(modules), json.dumps(FORBIDDEN)],
                          capture_output=True, text=True, timeout=120, check=False)


def test_core_modules_do_not_import_celery_redis_or_sqlalchemy() -> None:
    done = _probe(CORE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_probe_would_notice_a_leak() -> None:
    done = _probe(["farm.models", "celery"])
    assert done.returncode == 0, done.stderr
    assert "celery" in json.loads(done.stdout.strip().splitlines()[-1])


def test_the_probe_fails_when_a_listed_core_module_is_missing() -> None:
    done = _probe(["farm.models", "farm.no_such_module"])
    assert done.returncode != 0 and "No module named 'farm.no_such_module'" in done.stderr
