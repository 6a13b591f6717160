"""What ``farm test`` imports before it runs: only what it needs (issue 16, the whole command's wall).

Every command's module is imported on first use (``farm.cli.main.LazyGroup``); heavy libraries
load where they are used: pyhocon at the first HOCON file, Jinja at an HTML report, SQLAlchemy
when the history is opened, Celery with a broker, aiohttp when an HTTP agent is built.
"""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from farm.cli.main import COMMANDS, main
from tests.servers import ROOT

HEAVY = ("pyhocon", "pyparsing", "jinja2", "sqlalchemy", "celery", "kombu", "redis", "aiohttp", "yaml", "scipy")


def test_the_cli_and_farm_test_import_no_heavy_library() -> None:
    probe = ("import sys, farm.cli.main, farm.cli.test; "
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


def test_every_command_is_listed_and_loads_by_its_name() -> None:
    listed = CliRunner().invoke(main, ["--help"])
    assert listed.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in listed.output
        command = main.get_command(click.Context(main), name)
        assert command is not None and command.name == name
        assert CliRunner().invoke(main, [name, "--help"]).exit_code == 0


def test_an_unknown_command_is_a_usage_error() -> None:
    done = CliRunner().invoke(main, ["tset"])
    assert done.exit_code == 2
    assert "No such command 'tset'" in done.output
