"""What ``farm test`` imports before it runs: only what it needs (issue 16, the whole command's wall).

Every command's module is imported on first use (``farm.cli.main.LazyGroup``); heavy libraries
load where they are used: pyhocon at the first HOCON file, Jinja at an HTML report, SQLAlchemy
when the history is opened, Celery with a broker, aiohttp when an HTTP agent is built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from farm.cli.main import COMMANDS, SUMMARIES, main
from tests.support.servers import ROOT

HEAVY = ("pyhocon", "pyparsing", "jinja2", "sqlalchemy", "celery", "kombu", "redis", "aiohttp", "yaml", "scipy")


def test_the_cli_and_farm_test_import_no_heavy_library() -> None:
    probe = ("import sys, farm.cli.main, farm.cli.test; "
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


def test_farm_test_parses_toml_only_with_a_quarantine_file() -> None:
    """tomllib loads where a quarantine file is read (a sweep's history migration may load it too:
    Alembic's, on a new database), so the probe imports what ``farm test`` runs, without a sweep."""
    probe = ("import sys, farm.cli.main, farm.cli.test, farm.api, farm.quarantine.plan; "
             "print('tomllib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False"]


def test_every_command_is_listed_and_loads_by_its_name() -> None:
    listed = CliRunner().invoke(main, ["--help"])
    assert listed.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in listed.output
        command = main.get_command(click.Context(main), name)
        assert command is not None and command.name == name
        assert CliRunner().invoke(main, [name, "--help"]).exit_code == 0


HELP_PROBE = """
import atexit, click, sys
from farm.cli.main import COMMANDS, main
atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith("farm.cli.")), file=sys.stderr))
if sys.argv[1] == "load":
    for name in COMMANDS:
        main.get_command(click.Context(main), name)
main(["--help"], prog_name="farm")
"""


def test_farm_help_lists_every_command_as_it_says_itself_without_importing_one() -> None:
    """``farm --help`` lists the commands from ``SUMMARIES``: the same listing as with every
    command imported, and no command module loaded (all of them cost about 0.5 s)."""
    assert set(SUMMARIES) == set(COMMANDS)
    plain, loaded = (subprocess.run([sys.executable, "-c", HELP_PROBE, mode], cwd=ROOT, capture_output=True,
                                    text=True, check=True) for mode in ("plain", "load"))
    assert plain.stdout == loaded.stdout and "Commands:" in plain.stdout
    assert plain.stderr.strip() == "['farm.cli.main']"
    assert "farm.cli.assess" in loaded.stderr  # the probe sees what a command imports


def test_a_command_is_imported_without_collecting_garbage(tmp_path: Path) -> None:
    """Importing ``farm test``'s modules (the command, then what its body runs) makes objects that
    all stay: about 100 young collections (20-40 ms of each start) found nothing to free
    (``farm.collector.paused``); one may come each time the collector is enabled again. The probe
    counts them until the sweep is prepared: an empty suite (exit 2) stops it there."""
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    probe = ("import atexit, gc, sys; from farm.cli.main import main; seen = []; "
             "gc.callbacks.append(lambda phase, info: seen.append(phase)); "
             "atexit.register(lambda: print(seen.count('start'), gc.isenabled(), file=sys.stderr)); "
             "main(['test', '-i', 'empty.jsonl', '-n', 'py:x.py:f', '--no-history'])")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    collections, enabled = done.stderr.splitlines()[-1].split()
    assert int(collections) <= 3 and enabled == "True", done.stderr


def test_farm_test_help_loads_its_flags_not_the_sweep() -> None:
    """``farm test --help`` imports the command's flags and their defaults (``farm.defaults``), not
    what runs a sweep (``farm.cli.test_run``: pydantic, rich, the planner; ~0.3 s of CPU)."""
    probe = ("import sys; from farm.cli.main import main\n"
             "try:\n    main(['test', '--help'], prog_name='farm')\nexcept SystemExit:\n    pass\n"
             "print(' '.join(m for m in ('farm.cli.test_run', 'farm.api', 'farm.models', 'pydantic', 'rich') "
             "if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "--parallel INTEGER" in done.stdout and "--sprt P0,P1,ALPHA,BETA" in done.stdout
    assert done.stderr.split() == []


def test_an_unknown_command_is_a_usage_error() -> None:
    done = CliRunner().invoke(main, ["tset"])
    assert done.exit_code == 2
    assert "No such command 'tset'" in done.output


LOADED_AGENT = '''
import sys


def respond(messages):
    return "sqlalchemy loaded" if "sqlalchemy" in sys.modules else "sqlalchemy not loaded"
'''


def test_the_default_history_loads_sqlalchemy_not_before_the_runs(tmp_path: Path) -> None:
    """The default history URL is the farm's own SQLite file: nothing to check before the runs,
    so SQLAlchemy (0.3-0.4 s) is not imported before the first run (nor after it: the sweep waits
    in the history's inbox for its next reader, ``farm.history.inbox``)."""
    (tmp_path / "agent.py").write_text(LOADED_AGENT, encoding="utf-8")
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "FARM_HISTORY_URL"}
    done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "suite.jsonl", "-n", "py:agent.py:respond",
                           "-o", "out.jsonl", "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line).get("output") for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert "sqlalchemy not loaded" in outputs
    assert list((Path(env["FARM_DATA_DIR"]) / "history.sqlite.inbox").glob("*.json"))  # and the sweep was left


def test_a_history_url_given_is_still_checked_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(LOADED_AGENT, encoding="utf-8")
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    env = {**os.environ, "FARM_HISTORY_URL": "mysql://db/farm"}
    done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "suite.jsonl", "-n", "py:agent.py:respond",
                           "-o", "out.jsonl", "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert "unsupported database 'mysql'" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


UNUSED_BY_A_PLAIN_SWEEP = ("tenacity", "tornado", "rich.progress", "farm.agents.connectors", "farm.agents.transport",
                           "farm.agents.quota", "farm.agents.isolation", "psutil", "farm.cli.estimate",
                           "farm.distributed", "jsonpath_ng", "json5")


def test_a_plain_sweep_imports_no_retry_judge_transport_or_progress_bar(tmp_path: Path) -> None:
    """A python agent, no judge named, ``--no-progress``: tenacity (which imports tornado) waits for
    a transient fault, the connectors and their HTTP transport for a judge or ``llm:`` simulator,
    rich.progress for a bar that is drawn, the subprocess pool (psutil) for ``--isolate``,
    jsonpath-ng for a ``json_path`` check, json5 for a manifest, the comparison of sweeps for a
    baseline, recorded sweeps read back (issue 32: every ``farm`` process pays its imports)."""
    (tmp_path / "agent.py").write_text("def respond(messages):\n    return 'hi'\n", encoding="utf-8")
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "farm", "test", "-i", "suite.jsonl",
                           "-n", "py:agent.py:respond", "-o", "out.jsonl", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert {"farm.sweep.observers", "farm.agents.retry", "farm.agents.judge", "rich.console"} <= loaded  # seen
    assert sorted(m for m in loaded if m.startswith(UNUSED_BY_A_PLAIN_SWEEP)) == []
    assert "farm.stats.compare" not in loaded  # its terms (farm.stats.compare_terms) are


def test_a_command_leaves_its_objects_out_of_the_last_collections() -> None:
    """``farm.collector.freeze_at_exit``: the interpreter's collections at exit cost 0.2-0.3 s
    of every command; the command's objects are frozen before them (atexit: last in, first out)."""
    probe = ("import atexit, gc, sys; atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0)); "
             "from farm.cli.main import main; main(['--version'])")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    version, *at_exit = done.stdout.splitlines()
    assert version.startswith("farm, version") and at_exit == ["frozen True"]


def _imports_aiohttp(tmp_path: Path, *flags: str, agent: str = "http://127.0.0.1:9/agent"
                     ) -> tuple[subprocess.CompletedProcess[str], bool]:
    """``farm test`` of an HTTP agent with ``flags`` under ``-X importtime``: its run, and whether it loaded aiohttp."""
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "input": "hi"}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "farm", "test", "-i", "suite.jsonl",
                           "-n", agent, "--no-progress", "--no-history", *flags],
                          cwd=tmp_path, capture_output=True, text=True)
    loaded = any(line.rsplit("|", 1)[-1].strip() == "aiohttp" for line in done.stderr.splitlines()
                 if line.startswith("import time:"))
    return done, loaded


def test_an_http_agent_only_listed_never_loads_the_http_client(tmp_path: Path) -> None:
    for flag in ("--collect-only", "--dry-run"):
        done, loaded = _imports_aiohttp(tmp_path, flag)
        assert done.returncode == 0, done.stderr[-2000:]
        assert not loaded, flag
    done, loaded = _imports_aiohttp(tmp_path, "-o", "out.jsonl")  # in-process: its runs call the agent
    assert loaded and (tmp_path / "out.jsonl").is_file()


@pytest.mark.redis
def test_a_distributed_submitter_checks_an_http_agent_without_loading_the_http_client(
        tmp_path: Path, redis_server: str, redis_client: Any) -> None:
    done, loaded = _imports_aiohttp(tmp_path, "--broker", redis_server, "--detach")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not loaded
    assert redis_client.keys("farm:sweep:*")  # the sweep was stored for the workers
    done, _ = _imports_aiohttp(tmp_path, "--broker", redis_server, "--detach", agent="http://[::1/bad")
    assert done.returncode == 2  # and the agent is still checked: a bad URL is exit 2
