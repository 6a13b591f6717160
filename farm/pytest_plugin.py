"""The pytest plugin (entry point ``farm`` in the ``pytest11`` group): farm suites as pytest items.

``pytest --farm-suite suite.jsonl --farm-agent py:agent.py:respond --farm-runs 20`` makes each case
of the suite an item (``suite.jsonl::case-id``), so ``-k``, ``--junitxml`` and ``--lf`` work on
cases. The sweep runs once, when the first farm item runs, over the items left after collection
and deselection (``farm.pytest_items``). The suites are added to pytest's own collection
arguments, so ordinary tests collect beside them and a suite given twice is collected once.

Every pytest run in an environment with the farm installed loads this module, so it imports only
the standard library and pytest: the farm itself (``farm.pytest_items``, the models, the suites)
is imported when a suite is given, never by a run that uses no ``--farm-*`` flag or ``[tool.farm]``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from farm.pytest_items import FarmSweeps, SuiteFile

__all__ = ["SUITES_KEY", "SWEEPS_KEY", "pytest_addoption", "pytest_collect_file", "pytest_collection_finish",
           "pytest_configure"]

SUITES_KEY = pytest.StashKey[list[Path]]()
"""The session's ``--farm-suite`` paths (resolved)."""
SWEEPS_KEY: pytest.StashKey[FarmSweeps] = pytest.StashKey()
"""The session's ``FarmSweeps`` (absent when no suite is given)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("farm", "agent-farm: run agent test suites N times and gate on pass rates")
    group.addoption("--farm-suite", action="append", default=[], metavar="PATH",
                    help="A farm suite file (.jsonl, .hocon, .conf) or directory; repeatable. Each case is an "
                         "item. Also [tool.farm] suites = [...] in pyproject.toml.")
    group.addoption("--farm-agent", default=None, metavar="REF",
                    help="The agent under test, as farm test -n takes it (py:file.py:fn, http://…, an id).")
    group.addoption("--farm-runs", type=int, default=None, metavar="N", help="Runs per case (default 1, or the "
                    "case's success_ratio).")
    group.addoption("--farm-min-pass-rate", default=None, metavar="RATE",
                    help="A case passes when its pass rate is at least RATE (0.95 or 95%%; default 100%%).")
    group.addoption("--farm-broker", default=None, metavar="URL",
                    help="Run the sweep on Celery workers on this broker (default: FARM_BROKER_URL; unset: "
                         "in-process).")


def _pyproject_suites(root: Path) -> list[Path]:
    """``[tool.farm] suites`` of the project's pyproject.toml, relative to it."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("farm", {})
    except tomllib.TOMLDecodeError as exc:
        raise pytest.UsageError(f"{pyproject}: {exc}") from None
    suites = table.get("suites", [])
    if not isinstance(suites, list) or not all(isinstance(s, str) for s in suites):
        raise pytest.UsageError(f"{pyproject}: [tool.farm] suites: must be a list of paths")
    return [root / s for s in suites]


def _rate(text: str | None) -> float:
    """``--farm-min-pass-rate``, read as ``farm test --min-pass-rate`` reads it."""
    if text is None:
        return 1.0
    import click

    from farm.cli.options import RATE

    try:
        return RATE.convert(text, None, None)
    except click.BadParameter as exc:
        raise pytest.UsageError(f"--farm-min-pass-rate: {exc.format_message()}") from None


def pytest_configure(config: pytest.Config) -> None:
    given = [Path(p) for p in config.getoption("farm_suite") or []]
    suites = [p.resolve() for p in given or _pyproject_suites(config.rootpath)]
    for suite in suites:
        if not suite.exists():
            where = "--farm-suite" if given else f"{config.rootpath / 'pyproject.toml'}: [tool.farm] suites:"
            raise pytest.UsageError(f"{where} {suite}: no such file or directory")
    config.stash[SUITES_KEY] = suites
    config.addinivalue_line("markers", "farm: a case of an agent-farm suite (the pytest plugin)")
    if not suites:
        return
    from farm.pytest_items import FarmSweeps  # the farm loads here: a suite is given

    runs = config.getoption("farm_runs")
    if runs is not None and runs < 1:
        raise pytest.UsageError(f"--farm-runs {runs}: must be at least 1")
    config.stash[SWEEPS_KEY] = FarmSweeps(
        agent=config.getoption("farm_agent"), runs=runs, min_pass_rate=_rate(config.getoption("farm_min_pass_rate")),
        broker=config.getoption("farm_broker") or os.environ.get("FARM_BROKER_URL") or None,
        cwd=str(config.invocation_params.dir), suites=suites,
    )
    if given or config.args_source != pytest.Config.ArgsSource.ARGS:
        # collected beside the ordinary tests; [tool.farm] suites, as testpaths, only when no path is given
        config.args = [*config.args, *_uncovered(config, suites)]


def _uncovered(config: pytest.Config, suites: list[Path]) -> list[str]:
    """The suites none of the command line's own arguments reaches: added to what pytest collects.
    A suite the arguments name (``s.jsonl::case``), hold (``.``) or lie in is left to them, so
    pytest's merging of overlapping arguments never widens ``s.jsonl::case`` to the whole suite."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return [str(s) for s in suites]  # testpaths or the directory: merged with the suites as usual
    given = [(config.invocation_params.dir / a.split("::", 1)[0]).resolve() for a in config.args]
    return [str(s) for s in suites if not any(a == s or a in s.parents or s in a.parents for a in given)]


def _is_suite(config: pytest.Config, path: Path) -> bool:
    suites = config.stash.get(SUITES_KEY, [])
    if not suites:
        return False
    from farm.suites import SUITE_SUFFIXES

    if not path.name.lower().endswith(SUITE_SUFFIXES):
        return False
    resolved = path.resolve()
    return any(resolved == s or (s.is_dir() and s in resolved.parents) for s in suites)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    if _is_suite(parent.config, file_path):
        from farm.pytest_items import SuiteFile

        node: SuiteFile = SuiteFile.from_parent(parent, path=file_path, sweeps=parent.config.stash[SWEEPS_KEY])
        return node
    return None


def pytest_report_header(config: pytest.Config) -> str | None:
    sweeps = config.stash.get(SWEEPS_KEY, None)
    if sweeps is None:
        return None
    where = "distributed" if sweeps.broker else "in-process"
    return f"farm: {sweeps.runs or 'default'} runs per case, agent {sweeps.agent or '(from the suite)'}, {where}"


def pytest_collection_finish(session: pytest.Session) -> None:
    sweeps = session.config.stash.get(SWEEPS_KEY, None)
    if sweeps is not None:
        sweeps.select(session.items)  # after -k, -m, --lf and deselection: only these cases run
        if not session.config.option.collectonly:
            sweeps.prepare()  # a suite farm test refuses (exit 2) is a usage error here, before any test
