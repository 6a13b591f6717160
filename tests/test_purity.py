"""The pure core never imports celery, redis, workers or the history store's SQL stack (ARCHITECTURE rule 1)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CORE = ["farm.models", "farm.suites", "farm.checks", "farm.stats", "farm.stats.compare", "farm.reports",
        "farm.reports.comparison", "farm.reports.history_html", "farm.execute"]

PROBE = textwrap.dedent(
    """
    import importlib, importlib.util, json, sys
    FORBIDDEN = ("celery", "redis", "kombu", "workers", "sqlalchemy", "alembic", "psycopg")
    imported = []
    for name in json.loads(sys.argv[1]):
        if importlib.util.find_spec(name) is not None:  # modules still being written are skipped
            importlib.import_module(name)
            imported.append(name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    print(json.dumps({"imported": imported, "leaked": leaked}))
    """
)


def test_core_modules_do_not_import_celery_or_redis() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(CORE)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"farm.models", "farm.suites", "farm.checks"} <= set(result["imported"])
    assert result["leaked"] == []


def test_the_probe_would_notice_a_leak() -> None:
    # The same probe, given a module that does import celery, must report it.
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["farm.models", "celery"])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "celery" in json.loads(done.stdout.strip().splitlines()[-1])["leaked"]
