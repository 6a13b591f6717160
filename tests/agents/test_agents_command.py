"""The command adapter: real programs written by the tests, run as subprocesses."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from farm.agents.command import CommandAgent, create_command_agent
from farm.errors import AgentError, AgentResolutionError
from farm.models import Reply
from tests.support.servers import agent_request

ECHO = """
import json, sys
request = json.load(sys.stdin)
users = [m["content"] for m in request["messages"] if m["role"] == "user"]
sly = dict(request["sly_data"] or {}, turns=len(users))
print(json.dumps({"text": users[-1], "sly_data": sly, "structure": None, "usage": {"n": len(request["messages"])}}))
"""
CONTEXT = """
import json, sys
print(json.dumps(json.load(sys.stdin)["context"]))
"""
TEXT = "import sys; sys.stdin.read(); print('just words')\n"
FAIL = "import sys; sys.stdin.read(); sys.stderr.write('Traceback: boom happened\\n'); sys.exit(3)\n"
SLEEPER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open(sys.argv[1], "w") as f:
    f.write(f"{__import__('os').getpid()} {child.pid}")
time.sleep(60)
"""


def program(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def ask(agent: CommandAgent, request: object) -> Reply:
    return asyncio.run(agent.respond(request))  # type: ignore[arg-type]


def test_json_on_stdout_fills_the_reply(tmp_path: Path) -> None:
    program(tmp_path, "echo.py", ECHO)
    agent = create_command_agent("echo.py", base_dir=tmp_path)
    history = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": "two"},
    ]
    reply = ask(agent, agent_request(history, sly_data={"k": "v"}))
    assert reply.text == "two"
    assert reply.sly_data == {"k": "v", "turns": 2}
    assert reply.usage == {"n": 3}
    assert agent.id == "cmd:echo.py"


def test_the_context_is_on_stdin(tmp_path: Path) -> None:
    program(tmp_path, "context.py", CONTEXT)
    reply = ask(create_command_agent("context.py", base_dir=tmp_path), agent_request("x", user_id="zoe", run=2))
    assert reply.structure["user_id"] == "zoe"
    assert reply.structure["run"] == 2


def test_other_output_is_text(tmp_path: Path) -> None:
    program(tmp_path, "text.py", TEXT)
    assert ask(create_command_agent("text.py", base_dir=tmp_path), agent_request("x")).text == "just words"


def test_programs_on_path_with_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program(tmp_path, "echo.py", ECHO)
    python = Path(sys.executable).name
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    agent = create_command_agent(f"{python} echo.py", base_dir=tmp_path)
    assert ask(agent, agent_request("via path")).text == "via path"


def test_a_non_zero_exit_is_an_agent_error_with_stderr(tmp_path: Path) -> None:
    program(tmp_path, "fail.py", FAIL)
    with pytest.raises(AgentError, match=r"exited with 3: Traceback: boom happened"):
        ask(create_command_agent("fail.py", base_dir=tmp_path), agent_request("x"))


def test_a_missing_program_is_a_resolution_error(tmp_path: Path) -> None:
    with pytest.raises(AgentResolutionError, match=r"'nope\.py' not found"):
        create_command_agent("nope.py --flag", base_dir=tmp_path)
    with pytest.raises(AgentResolutionError, match="cannot split"):
        create_command_agent("'unclosed", base_dir=tmp_path)
    with pytest.raises(AgentResolutionError, match="no program"):
        create_command_agent("  ", base_dir=tmp_path)


def test_a_file_that_is_not_executable_is_refused(tmp_path: Path) -> None:
    program(tmp_path, "agent.sh", "echo hi\n")
    with pytest.raises(AgentResolutionError, match="is not executable"):
        create_command_agent("agent.sh", base_dir=tmp_path)


def gone(pid: int, within: float = 10.0) -> bool:
    """True once the process has exited (a zombie nobody reaped counts as gone)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def started_pids(pid_file: Path) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text().strip():
            return [int(p) for p in pid_file.read_text().split()]
        time.sleep(0.05)
    raise AssertionError("the program never started")


def test_the_turn_timeout_kills_the_program_and_its_children(tmp_path: Path) -> None:
    program(tmp_path, "sleeper.py", SLEEPER)
    pid_file = tmp_path / "pids"
    agent = create_command_agent(f"sleeper.py {pid_file}", base_dir=tmp_path)
    with pytest.raises(TimeoutError, match="killed"):
        ask(agent, agent_request("x", timeout_s=1.5))
    assert all(gone(pid) for pid in started_pids(pid_file))


def test_cancellation_kills_the_program_and_its_children(tmp_path: Path) -> None:
    program(tmp_path, "sleeper.py", SLEEPER)
    pid_file = tmp_path / "pids"
    agent = create_command_agent(f"sleeper.py {pid_file}", base_dir=tmp_path)

    async def go() -> None:
        task = asyncio.ensure_future(agent.respond(agent_request("x")))
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.05)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(task, 0.2)
        assert task.cancelled()

    asyncio.run(go())
    assert all(gone(pid) for pid in started_pids(pid_file))


def test_secrets_never_reach_the_reply(tmp_path: Path) -> None:
    from farm.agents.secrets import register_secret

    register_secret("sk-command-secret-9")
    program(tmp_path, "leak.py", "import sys; sys.stdin.read(); print('my key is sk-command-secret-9')\n")
    reply = ask(create_command_agent("leak.py", base_dir=tmp_path), agent_request("x"))
    assert "sk-command-secret-9" not in reply.model_dump_json()


DETACHES = """
import json, subprocess, sys
json.load(sys.stdin)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # inherits stdout
with open(sys.argv[1], "w") as f:
    f.write(str(child.pid))
print("answered")
"""


def test_a_child_left_holding_stdout_is_no_timeout_and_dies_with_the_turn(tmp_path: Path) -> None:
    program(tmp_path, "detaches.py", DETACHES)
    pid_file = tmp_path / "pids"
    agent = create_command_agent(f"detaches.py {pid_file}", base_dir=tmp_path)
    reply = ask(agent, agent_request("x", timeout_s=60))
    assert reply.text == "answered"
    [child] = started_pids(pid_file)
    assert gone(child)


def test_a_detached_child_in_a_shell_script_dies_with_the_turn(tmp_path: Path) -> None:
    script = program(tmp_path, "detach.sh", f"#!/bin/sh\ncat >/dev/null\nsleep 600 &\necho $! > {tmp_path / 'pids'}\n"
                                            "echo shell-answer\n")
    script.chmod(0o755)
    agent = create_command_agent("detach.sh", base_dir=tmp_path)
    reply = ask(agent, agent_request("x", timeout_s=60))
    assert reply.text == "shell-answer"
    assert all(gone(pid) for pid in started_pids(tmp_path / "pids"))
