"""A project for fleet-control sweeps: a prompt agent and a judge behind the bundled
OpenAI-compatible server (``examples/servers/openai_server.py``, which reports ``usage``), a price
file for its model, and the farm CLI run in a subprocess (exit codes are part of the contract).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.servers import ROOT, Served, openai_server

KEY = "sk-fleet-test-3b8e1f0c9a7d4e2b"
MODEL = "gpt-fleet-test"
PRICE = {"input": 1000.0, "output": 2000.0}
"""USD per million tokens: a call of a few dozen tokens costs a few cents."""
COIN = f"py:{ROOT / 'tests' / 'agents' / 'coin.py'}:respond"
"""The agent of known pass probability (``tests/agents/coin.py``), by absolute path."""


@contextmanager
def llm_server() -> Iterator[Served]:
    """The bundled OpenAI-compatible server in its own process, requiring ``KEY``."""
    with openai_server(key=KEY, separate_process=True) as served:
        yield served


def calls(served: Served) -> int:
    """Every chat completion the server has answered so far."""
    return sum(served.stats()["hits"].values())


def report_of(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def write_connector(root: Path, host: str, *, model: str = MODEL, max_tokens: int | None = 40,
                    rate_limit: str | None = None) -> str:
    """``connectors/local/llm.conn.yao`` (its key from the environment); returns its id."""
    options: dict[str, Any] = {"model": model, "host": host, "key": "$ENV.FARM_TEST_OPENAI_KEY"}
    if max_tokens is not None:
        options["max_tokens"] = max_tokens
    data: dict[str, Any] = {"type": "openai", "options": options}
    if rate_limit is not None:
        data["rate_limit"] = rate_limit
    path = root / "connectors" / "local" / "llm.conn.yao"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return "local.llm"


def write_prompt_agent(root: Path, cases: list[dict[str, Any]], *, connector: str = "local.llm") -> Path:
    """A keyword-extracting prompt agent with ``cases``; returns its suite."""
    agent = root / "assistants" / "extractor"
    (agent / "tests").mkdir(parents=True, exist_ok=True)
    (agent / "package.yao").write_text(json.dumps({"type": "prompt", "connector": connector}))
    (agent / "prompts.yml").write_text("- role: system\n  content: You extract keyword lists as JSON.\n")
    suite = agent / "tests" / "inputs.jsonl"
    suite.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return suite


def write_suite(root: Path, name: str, cases: list[dict[str, Any]]) -> Path:
    suite = root / name
    suite.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return suite


def write_prices(root: Path, model: str = MODEL, price: dict[str, float] | None = None) -> Path:
    path = root / "prices.json"
    path.write_text(json.dumps({"models": {model: price or PRICE}}))
    return path


def farm_env(root: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "FARM_TEST_OPENAI_KEY": KEY, "FARM_AGENTS_ROOT": str(root / "assistants"),
           "FARM_CONNECTORS_ROOT": str(root / "connectors"),
           "PYTHONPATH": str(ROOT)}  # a worktree's subprocess imports its own code, not the editable install's
    return {**env, **extra}


def run_farm(root: Path, *args: str, env: dict[str, str] | None = None,
             timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    """``farm test ARGS`` in ``root``, with no progress bar and no history."""
    return subprocess.run([sys.executable, "-m", "farm", "test", "--no-progress", "--no-history", *args],
                          cwd=root, env=env or farm_env(root), capture_output=True, text=True, timeout=timeout)


def secrets_in(directory: Path, secret: str) -> list[Path]:
    """Files under ``directory`` whose text holds ``secret``."""
    return [p for p in directory.rglob("*") if p.is_file() and secret in p.read_text(errors="replace")]
