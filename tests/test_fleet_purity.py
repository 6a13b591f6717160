"""Fleet control's pure parts import neither celery nor redis: reports, statistics and
``execute`` may use them (only ``redis_*`` modules talk to Redis)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.test_purity import PROBE

PURE = ["farm.fleet", "farm.fleet.specs", "farm.fleet.ratestate", "farm.fleet.limiter", "farm.fleet.local_rates",
        "farm.fleet.usage", "farm.fleet.prices", "farm.fleet.budget", "farm.fleet.control", "farm.fleet.quota",
        "farm.fleet.judge_cache", "farm.fleet.replay", "farm.stats.adaptive"]


def test_fleet_pure_modules_do_not_import_celery_or_redis() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(PURE)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["imported"] == PURE
    assert result["leaked"] == []
