"""A dynamic case on real ``farm worker`` processes (real redis-server): the simulator, the
checkpoints and the conversation cross Redis as JSON and come back as they do in-process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import openai_server

pytestmark = [pytest.mark.redis, pytest.mark.slow]

AGENT = "def respond(messages, context):\n    return 'you said: ' + messages[-1]['content']\n"


def test_a_dynamic_sweep_on_workers_matches_in_process(tmp_path: Path, redis_client: Any, farm_worker: Any,
                                                       farm_cli: Any, counting_agent: Any) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    agent = counting_agent(f"{tmp_path}/agent.py:respond")  # one agent for both sweeps: the reports name it alike
    connectors = tmp_path / "connectors" / "local"
    connectors.mkdir(parents=True)
    with openai_server() as server:
        (connectors / "sim.conn.yao").write_text(json.dumps(
            {"type": "openai", "options": {"model": "echo", "host": server.url}}))
        points = [{"id": "greet", "assert": {"type": "contains", "value": "hello"}},
                  {"id": "order", "after": ["greet"], "assert": {"type": "contains", "value": "latte"}},
                  {"id": "never", "required": False, "assert": {"type": "contains", "value": "cake"}}]
        cases = [{"id": "scripted", "input": "hello", "checkpoints": points, "simulator": {
                     "fixed_responses": ["a latte please"]}},
                 {"id": "llm", "input": "hello", "checkpoints": points, "simulator": {
                     "use": "llm:local.sim", "options": {"metadata": {"script": [None, "tea", "a latte"]}}}},
                 {"id": "stuck", "input": "hello", "max_turns": 2, "checkpoints": points, "simulator": {
                     "fixed_responses": ["tea", "tea"]}}]
        suite = tmp_path / "dynamic.jsonl"
        suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
        env = {"FARM_CONNECTORS_ROOT": str(tmp_path / "connectors")}
        farm_worker(queue="dynamic", env=env)
        common = ["test", "-i", str(suite), "-n", agent.ref, "--runs", "3", "--no-progress"]
        local = farm_cli.run(*common, "-o", str(tmp_path / "local.json"), local=True, env=env)
        agent.assert_once_each(9)  # each run's turns once each: 3 cases of 3 runs
        agent.clear()
        remote = farm_cli.run(*common, "-o", str(tmp_path / "remote.json"), "--broker", farm_cli.broker,
                              "--queue", "dynamic", env=env)
    assert local.returncode == remote.returncode == 1, remote.stderr
    agent.assert_once_each(9)
    reports = [json.loads((tmp_path / f"{name}.json").read_text()) for name in ("local", "remote")]

    def facts(report: dict[str, Any]) -> list[Any]:
        return [(case["id"], case["passed"], case["checkpoints"], case["failure_classes"],
                 [[(t["turn"], t["input"], t["output"]) for t in d["turns"]] for d in case["run_details"]],
                 [(d["run"], d["checkpoints"]) for d in case["run_details"]]) for case in report["results"]]

    assert facts(reports[1]) == facts(reports[0])
    stuck = reports[1]["results"][2]
    assert stuck["failure_classes"]["assertion:checkpoint:order"]["count"] == 3
    assert reports[1]["results"][1]["run_details"][0]["turns"][2]["input"] == "a latte"
