"""neuro-san ``connections`` as the farm reads them (issue 29): ``mcp`` is spoken, ``grpc`` and
``service`` are skipped naming the neuro-san version that dropped them, and with ``-n`` naming an
agent that is not a neuro-san server the connections do not apply: the case runs once, with a note.

The files are shaped like real mcp- and grpc-only fixtures (written here, not copied).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from farm.agents.options import AgentOptions
from farm.agents.resolve import resolve_case_agent
from farm.models import Case, Message, Turn
from tests.agents.test_neuro_san_genuine import FIXTURE

CASES = FIXTURE / "cases"
ECHO = "def respond(messages, context):\n    return messages[-1]['content']\n"


def _copy(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in names:
        (folder / name).write_text((CASES / name).read_text())
    return folder


def test_a_foreign_agent_runs_each_case_once_with_a_note(tmp_path: Path, farm_cli: Any) -> None:
    folder = _copy(tmp_path, "grpc_only.hocon", "multi_turn.hocon", "mcp_only.hocon")
    agent = tmp_path / "echo.py"
    agent.write_text(ECHO)
    done = farm_cli.run("test", "-i", str(folder), "-n", f"py:{agent}:respond", "--no-history", "--no-progress",
                        "-o", str(tmp_path / "r.json"), local=True)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert sorted((c["id"], c["runs"], c["passed"]) for c in report["results"]) == [
        ("grpc_only", 1, 1), ("mcp_only", 1, 1), ("multi_turn", 1, 1)]
    assert report["summary"]["skipped_ids"] == []
    assert (f"case multi_turn: connections (http, mcp) do not apply to -n py:{agent}:respond (not a neuro-san "
            "server): run once") in done.stderr
    assert "case grpc_only: connections (grpc) do not apply" in done.stderr


def test_a_neuro_san_agent_keeps_the_connections(tmp_path: Path, farm_cli: Any) -> None:
    folder = _copy(tmp_path, "grpc_only.hocon", "multi_turn.hocon")
    done = farm_cli.run("test", "-i", str(folder), "-n", "neuro-san://127.0.0.1:1/echo", "--collect-only",
                        local=True)
    assert done.returncode == 0, done.stderr
    # --collect-only lists one case a line, a skipped one marked after its id
    assert sorted(line.split()[0] for line in done.stdout.splitlines()) == [
        "grpc_only@grpc", "multi_turn@http", "multi_turn@mcp"]
    assert "grpc_only@grpc skipped: connection 'grpc' is not spoken" in done.stderr


def test_grpc_and_service_only_files_say_which_neuro_san_dropped_them(tmp_path: Path, farm_cli: Any) -> None:
    for name in ("grpc", "service"):
        suite = tmp_path / f"{name}_only.hocon"
        suite.write_text((CASES / "grpc_only.hocon").read_text().replace('"grpc"', f'"{name}"'))
        done = farm_cli.run("test", "-i", str(suite), "--no-history", "--no-progress", local=True)
        assert done.returncode == 2, done.stderr
        assert (f"no runnable cases: 1 case is skipped (skip: true); e.g. connection '{name}' is not "
                "spoken: neuro-san's gRPC service") in done.stderr
        assert "neuro-san dropped its gRPC service in 0.6.0 (0.5.68 was the last to serve it" in done.stderr


def test_a_neuro_san_agent_named_by_n_is_called_over_the_cases_connection(tmp_path: Path) -> None:
    """``-n neuro-san://…`` picks the agent; an ``@mcp`` case still calls it as the server's MCP tool
    (else ``[http, mcp]`` would run twice over HTTP and compare HTTP with itself)."""
    options = AgentOptions(str(tmp_path), str(tmp_path), str(tmp_path))
    by_connection = {}
    for connection in ("http", "mcp"):
        case = Case(id=f"echo@{connection}", format="neuro-san", connection=connection, agent="echo",
                    turns=[Turn(messages=[Message(role="user", content="hi")])])
        by_connection[connection] = resolve_case_agent(case, "neuro-san://127.0.0.1:1/echo", options)
    assert (by_connection["http"].connection, by_connection["mcp"].connection) == ("", "mcp")
    assert by_connection["mcp"].label == "http://127.0.0.1:1/echo (mcp)"
