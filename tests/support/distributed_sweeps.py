"""Suites and reports of the distributed tests: the agents module, the parity sweep and its check.

The parity sweep runs the same cases in process and on workers; ``assert_parity`` holds that the
two reports count alike case by case.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

AGENTS = "py:tests/agents/distributed.py"


def write_suite(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


PARITY_CASES = [
    {"id": "mostly", "input": "hello", "assert": {"type": "contains", "value": "ok"}},
    {"id": "rarely", "input": "x", "assert": {"type": "equals", "value": "no"}},
    {"id": "always", "input": "same", "assert": {"type": "regex", "value": "^(ok|no)"}},
    {"id": "skipped", "input": "never sent", "skip": True},
]

COMPARED = ("id", "runs", "passed", "failed", "errors", "timeouts", "skipped", "pass_rate", "pass_rate_ci",
            "consistency", "stable", "stability_class", "label", "required_passes", "case_passed")


def assert_parity(local: Path, remote: Path) -> dict[str, Any]:
    """The parity sweep's two reports agree case by case and in the summary (its duration and load
    aside: measured, not counted); returns the distributed one."""
    local_report, remote_report = json.loads(local.read_text()), json.loads(remote.read_text())
    assert case_counts(remote_report) == case_counts(local_report)
    drop = ("duration_ms", "load_bias")
    assert {k: v for k, v in remote_report["summary"].items() if k not in drop} == \
        {k: v for k, v in local_report["summary"].items() if k not in drop}
    assert remote_report["summary"]["by_status"] == {"passed": 12, "failed": 6, "error": 0, "timeout": 0,
                                                     "skipped": 1}
    return remote_report


def case_counts(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: case[k] for k in COMPARED} | {"runs_seen": sorted(d["run"] for d in case["run_details"])}
            for case in report["results"]]
