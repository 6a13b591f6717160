"""A project of real parts for the dynamic-case, failure-class and assess tests.

``make_project`` writes, under a temporary directory, connectors pointing at the bundled
OpenAI-compatible server (``examples/servers/openai_server.py``) and a prompt agent that echoes
the last user message (its system prompt names none of the server's special roles). Cases are
JSONL lines written by the tests themselves, shaped like Yao's and neuro-san's real files.
``farm`` runs the real command line in this process (click's runner: ``run_command`` exits).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from farm.cli.main import main
from tests.support.servers import ROOT

ECHO_PROMPT = "- role: system\n  content: You are a barista. Repeat what the customer says.\n"


@dataclass
class Project:
    """A directory with connectors, an echo agent and somewhere to put suites."""

    root: Path
    host: str

    @property
    def agent_dir(self) -> Path:
        return self.root / "assistants" / "barista"

    def suite(self, cases: list[dict[str, Any]], name: str = "cases.jsonl") -> Path:
        path = self.agent_dir / "tests" / name
        path.write_text("\n".join(json.dumps(c) for c in cases) + "\n", encoding="utf-8")
        return path

    def connector(self, name: str, model: str) -> str:
        """Add ``connectors/local/<name>.conn.yao`` for ``model`` on the server; returns its id."""
        (self.root / "connectors" / "local" / f"{name}.conn.yao").write_text(
            json.dumps({"type": "openai", "options": {"model": model, "host": self.host}}))
        return f"local.{name}"


def make_project(root: Path, host: str) -> Project:
    (root / "connectors" / "local").mkdir(parents=True)
    project = Project(root, host)
    project.connector("echo", "echo")
    (project.agent_dir / "tests").mkdir(parents=True)
    (project.agent_dir / "package.yao").write_text('{"type": "prompt", "connector": "local.echo"}')
    (project.agent_dir / "prompts.yml").write_text(ECHO_PROMPT)
    return project


def _environment(project: Project, env: dict[str, str] | None) -> dict[str, str]:
    return {"FARM_AGENTS_ROOT": str(project.root / "assistants"),
            "FARM_CONNECTORS_ROOT": str(project.root / "connectors"), **(env or {})}


def farm(project: Project, *args: str, env: dict[str, str] | None = None) -> Result:
    """``farm ARGS`` in this process, from the project's root (its connectors and agents)."""
    with contextlib.chdir(project.root):
        return CliRunner().invoke(main, list(args), env=_environment(project, env), catch_exceptions=False)


def farm_process(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m farm ARGS`` in a process of its own (where this one already runs an event loop)."""
    return subprocess.run([sys.executable, "-m", "farm", *args], cwd=project.root, capture_output=True, text=True,
                          env={**os.environ, **_environment(project, None), "PYTHONPATH": str(ROOT)},  # own code
                          timeout=120, check=False)


def read_report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def result_of(report: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(r for r in report["results"] if r["id"] == case_id)
