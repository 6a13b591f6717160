"""Every in-process command the README shows works, run as written from a fresh checkout.

The tracked files are copied to a temporary directory (what a fresh clone holds: no
``assistants/``, no outputs), ``HOME`` points at an empty one, and each README line that runs
``farm test`` or ``farm report`` is run there through ``bash``, in README order, with the
bundled servers the README starts (on the ports it names) running. A command "works" when it
exits 0, or 1 where the README says cases fail on purpose: never 2 (bad input) or 3. Lines with
placeholders (``SWEEP_ID``, ``INPUT``), a broker, Docker or the real local model (its own test)
are reference, not runnable here.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import ROOT, stop_process, wait_for_port

README = (ROOT / "README.md").read_text(encoding="utf-8")
SERVER = re.compile(r"^python (examples/servers/\w+\.py) --port (\d+)(.*?)\s*&?\s*(#.*)?$")
PLACEHOLDER = re.compile(r"(?<![${\w])[A-Z][A-Z_]{2,}\b(?!=)")  # ${NAME:-…} is a variable, not one
NOT_HERE = ("--broker", "docker", "redis-server", "farm worker", "./.ci/run", "kubectl",
            "examples/local-llm")  # a real model's server: tests/project/test_local_llm.py runs that example


def code_lines() -> list[str]:
    """The README's indented code lines, in order."""
    return [line[4:].rstrip() for line in README.splitlines() if line.startswith("    ") and line.strip()]


def servers() -> dict[int, list[str]]:
    """The bundled servers the README starts, by port (the first line naming a port wins)."""
    found: dict[int, list[str]] = {}
    for line in code_lines():
        match = SERVER.match(line)
        if match:
            found.setdefault(int(match.group(2)), [match.group(1), "--port", match.group(2),
                                                   *match.group(3).split()])
    return found


def farm_commands() -> list[str]:
    """README lines running ``farm test`` / ``farm report`` that can run here, as written."""
    commands = []
    for line in code_lines():
        command = re.sub(r"^pip install [^&]*&&\s*", "", line)  # the set-up line: the venv has it
        command = re.sub(r"\s+#.*$", "", command)
        if not re.search(r"\bfarm (test|report)\b", command) or any(n in command for n in NOT_HERE):
            continue
        if PLACEHOLDER.search(re.sub(r'"[^"]*"', '""', command)):
            continue
        commands.append(command)
    return commands


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked files, as a fresh clone has them."""
    root = tmp_path_factory.mktemp("clone")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


@pytest.fixture(scope="module")
def readme_servers(checkout: Path) -> Iterator[None]:
    wanted = servers()
    busy = [port for port in wanted if not _port_free(port)]
    if busy:
        pytest.skip(f"the README's servers need ports {busy}, which another process holds")
    started = [subprocess.Popen([sys.executable, *argv], cwd=checkout, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for argv in wanted.values()]
    try:
        for port, process in zip(wanted, started, strict=True):
            wait_for_port(port, timeout=30, process=process)
        yield
    finally:
        for process in started:
            stop_process(process)


def test_the_readme_shows_runnable_commands() -> None:
    commands = farm_commands()
    assert any("-n keyword" in c for c in commands) and any("examples/prompt" in c for c in commands)
    assert any("cd examples/chaos" in c for c in commands)  # the chaos rehearsal pastes as written
    assert any(c.startswith("farm report") for c in commands)
    assert set(servers()) == {8001, 8002, 8003, 8080}  # the chaos server on its own port: seeded faults


def test_every_readme_command_works_from_a_fresh_checkout(checkout: Path, readme_servers: None,
                                                          tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {"HOME": str(home)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this venv's farm
    for command in farm_commands():
        done = subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode in (0, 1), f"{command}\n{done.stderr}"
        assert "farm: error" not in done.stderr, command
        failing_on_purpose = "flaky" in command or "examples/chaos" in command  # the README says so
        assert done.returncode == 0 or failing_on_purpose, f"{command}\n{done.stderr}"
        if "examples/chaos" in command:  # answered by the seeded chaos server, not another on its port
            assert "retry bias:" in done.stderr and "needed a transient retry" in done.stderr, done.stderr
    assert list((home / ".local" / "share" / "agent-farm" / "journals").glob("*.jsonl"))  # as the README says
    assert (checkout / "report.html").is_file() and (checkout / "junit.xml").is_file()  # farm report's


def test_what_the_readmes_commands_write_in_the_checkout_is_ignored_by_git() -> None:
    """A newcomer who pastes the README sees a clean ``git status`` (issue 39): every report,
    recording and trend page a command writes into the checkout is in ``.gitignore``."""
    written = set()
    for line in code_lines():
        where = re.match(r"cd (\S+) && ", line)
        for match in re.finditer(r"(-o|--html|--record)\s+([\w.\-]+)", line):
            name = f"{where.group(1)}/{match.group(2)}" if where else match.group(2)
            written.add(f"{name}/a-recording" if match.group(1) == "--record" else name)  # a directory's files
    assert {"report.html", "junit.xml", "examples/prompt/calls/a-recording"} <= written
    for name in sorted(written):
        ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", name], cwd=ROOT, check=False)
        assert ignored.returncode == 0, f"{name}: a README command writes it; .gitignore does not cover it"
