"""The package's walls, read from the source: what each room of ``farm`` may import, and that nothing circles."""

from __future__ import annotations

import ast
import fnmatch
import itertools
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

FARM = Path(__file__).resolve().parents[2] / "farm"


def imported_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every module a file imports (top level, inside functions, under TYPE_CHECKING) and every
    string handed to ``import_module``, with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and _calls_import_module(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield node.lineno, first.value


def _calls_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in {"import_module", "__import__"})


def imports_of(top: str) -> list[str]:
    """``file:line: module`` for each import of the ``top`` package found under ``farm/``."""
    found = []
    for path in sorted(FARM.rglob("*.py")):
        for line, name in imported_names(ast.parse(path.read_text(encoding="utf-8"))):
            if name.split(".")[0] == top:
                found.append(f"{path.relative_to(FARM.parent)}:{line}: {name}")
    return found


def test_farm_never_imports_workers() -> None:
    """``workers`` (the Celery app) imports ``farm``; the other way round would be a circle that only
    a deployment hides. ``farm worker`` names the app on Celery's command line instead."""
    assert imports_of("workers") == []


def test_the_walk_sees_imports_inside_functions_and_import_module_strings() -> None:
    tree = ast.parse("def f():\n    import redis\n    importlib.import_module('workers.app')\n")
    assert list(imported_names(tree)) == [(2, "redis"), (3, "workers.app")]


HEAVY = ("redis", "celery", "kombu", "sqlalchemy", "alembic", "psycopg")
"""Libraries that need a server or a broker: only the walls below may import them."""

WALLS = ("distributed", "history", "cli")
"""``farm/`` packages that may import ``HEAVY`` (with ``workers/``, outside ``farm``)."""


def heavy_imports_outside_the_walls() -> list[str]:
    """``file:line: module`` for each import of a heavy library by a module of ``farm/`` outside
    ``WALLS`` (at the top, in a function or under TYPE_CHECKING alike)."""
    found = []
    for path in sorted(FARM.rglob("*.py")):
        if path.relative_to(FARM).parts[0] in WALLS:
            continue
        for line, name in imported_names(ast.parse(path.read_text(encoding="utf-8"))):
            if name.split(".")[0] in HEAVY:
                found.append(f"{path.relative_to(FARM.parent)}:{line}: {name}")
    return found


def test_only_the_walls_import_redis_celery_kombu_or_the_sql_stack() -> None:
    """ARCHITECTURE rule 1 as a folder rule: the core reaches Redis, Celery and SQL through the
    functions of ``distributed/``, ``history/`` and ``cli/``, never by importing them itself."""
    assert heavy_imports_outside_the_walls() == []


def test_the_folder_rule_names_a_leak(tmp_path, monkeypatch) -> None:
    leaky = tmp_path / "farm"
    (leaky / "stats").mkdir(parents=True)
    (leaky / "distributed").mkdir()
    (leaky / "stats" / "x.py").write_text("def f():\n    import redis\n")
    (leaky / "distributed" / "y.py").write_text("import redis\n")
    monkeypatch.setattr(sys.modules[__name__], "FARM", leaky)
    assert heavy_imports_outside_the_walls() == ["farm/stats/x.py:2: redis"]


def test_every_lua_script_ships_in_the_wheel_and_names_its_keys_and_argv() -> None:
    """The Lua steps stand beside the modules that run them, read at import (``lua_script``): each is
    package data (pyproject), and each file's opening comment names its KEYS and ARGV."""
    pyproject = tomllib.loads((FARM.parent / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["farm"]
    scripts = sorted(FARM.rglob("*.lua"))
    assert scripts
    for script in scripts:
        relative = script.relative_to(FARM).as_posix()
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in shipped), relative
        header = "".join(itertools.takewhile(lambda line: line.startswith("--"),
                                             script.read_text(encoding="utf-8").splitlines(keepends=True)))
        assert "KEYS" in header and "ARGV" in header, relative


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(FARM.parent).with_suffix("").parts).removesuffix(".__init__")


def load_time_imports(everywhere: bool = False) -> dict[str, set[str]]:
    """Each ``farm`` module → the ``farm`` modules it imports as it loads (top-level statements
    only: imports in functions and under TYPE_CHECKING run later or never; ``everywhere``: those
    too). ``from pkg import sub`` counts ``pkg`` only when it takes a name that is not a
    submodule: a package is always loaded before its submodules, so only its names can be missing
    half-way."""
    modules = {module_name(p): p for p in FARM.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree) if everywhere else tree.body:
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                subs = {f"{node.module}.{alias.name}" for alias in node.names} & modules.keys()
                found |= subs | ({node.module} if len(subs) < len(node.names) else set())
        edges[name] = {m for m in found if m in modules and m != name}
    return edges


def import_circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in edges[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (top := stack.pop()) != module:
                group.append(top)
            if group:
                circles.append(sorted([module, *group]))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return circles


def test_no_import_circle_when_modules_load() -> None:
    assert import_circles(load_time_imports()) == []


def test_no_import_circle_counting_the_imports_in_functions() -> None:
    """A lazy import hides a circle from the loader, not from the reader (farm.sweep's journal and
    its index once imported each other, one of them inside a method)."""
    assert import_circles(load_time_imports(everywhere=True)) == []


def test_the_circle_finder_finds_one() -> None:
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_hall_holds_at_most_fifteen_modules() -> None:
    loose = sorted(p.name for p in FARM.glob("*.py"))
    assert len(loose) <= 15, loose


WORKERS = FARM.parent / "workers"
MAX_MODULE_LINES = 400
MAX_LONG_FUNCTIONS = 3
LONG_FUNCTION_LINES = 40


def sources() -> Iterator[Path]:
    """The modules of ``farm/`` and ``workers/``, Alembic's migrations aside (generated, one per revision)."""
    for root in (FARM, WORKERS):
        yield from (p for p in sorted(root.rglob("*.py")) if "migrations" not in p.relative_to(root).parts)


def long_modules() -> list[str]:
    """``file: lines`` for each module over ``MAX_MODULE_LINES``."""
    found = []
    for path in sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(FARM.parent)}: {lines}")
    return found


def long_functions() -> list[str]:
    """``file:line: name (lines)`` for each function or method over ``LONG_FUNCTION_LINES``
    (decorators aside, its docstring included)."""
    found = []
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG_FUNCTION_LINES:
                    found.append(f"{path.relative_to(FARM.parent)}:{node.lineno}: {node.name} ({length})")
    return found


def test_no_module_over_four_hundred_lines() -> None:
    assert long_modules() == []


def test_at_most_three_functions_over_forty_lines() -> None:
    assert len(long_functions()) <= MAX_LONG_FUNCTIONS, long_functions()


def test_the_size_walk_finds_a_long_function_and_module(tmp_path, monkeypatch) -> None:
    farm = tmp_path / "farm"
    (farm / "history" / "migrations").mkdir(parents=True)
    (tmp_path / "workers").mkdir()
    long_body = "".join(f"    x{i} = {i}\n" for i in range(40))
    (farm / "big.py").write_text("def long():\n" + long_body + "\n" * 400)
    (farm / "history" / "migrations" / "v1.py").write_text("def upgrade():\n" + long_body * 20)
    (tmp_path / "workers" / "w.py").write_text("async def short():\n    pass\n")
    monkeypatch.setattr(sys.modules[__name__], "FARM", farm)
    monkeypatch.setattr(sys.modules[__name__], "WORKERS", tmp_path / "workers")
    assert long_functions() == ["farm/big.py:1: long (41)"]
    assert long_modules() == ["farm/big.py: 441"]


def every_import(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` → the modules of ``package`` it imports anywhere: at the top, in a
    function (a lazy import hides a circle, it does not remove it) or under TYPE_CHECKING."""
    modules = {module_name(p): p for p in (FARM.parent / package.replace(".", "/")).rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = {imported for _, imported in imported_names(ast.parse(path.read_text(encoding="utf-8")))}
        edges[name] = {m for m in found if m in modules and m != name}
    return edges


def test_the_plan_imports_no_circle_even_lazily() -> None:
    """Issue 25 item 1: the plan (``SweepPlan.cases``, a ``CaseSource``) no longer reaches for its
    compact form (``farm.plan.compact_cases``), which builds on it."""
    edges = every_import("farm.plan")
    assert "farm.plan.compact_cases" not in edges["farm.plan.sweep_plan"]
    assert import_circles(edges) == []


FOLDERS = {
    "models": "data every stage passes on (pydantic models, JSON round-trips) and the pure rules on it",
    "imports": "importing user code by reference, a bundle's modules under names of their own",
    "checks": "checks on agent replies: Yao assertions, neuro-san stock tests, judges' verdict parsing",
    "agents": "adapters that call agents and judges, the one HTTP transport and its limiter seam",
    "suites": "suite loading: Yao JSONL and neuro-san HOCON into validated cases, Yao's hooks",
    "semantic": "answers compared by meaning: the local embedding model, clusters",
    "stats": "statistics of a sweep: per-case accumulation, intervals, compare, prices, adaptive rules",
    "run": "one run of one case: its turns under timeouts, the dynamic loop, the run's clock",
    "matrix": "matrix sweeps: the arms, their interleaved order, the per-arm report",
    "plan": "a sweep's plan as data: SweepPlan, batch planning, fleet control as declared",
    "fleet": "fleet control enforced in one process: rate limits, budgets, caches, record/replay",
    "quarantine": "quarantine entries read from farm-quarantine.toml and given to a plan",
    "bundles": "what a distributed sweep carries of its project: roots, archive, a worker's copy",
    "estimate": "farm test --estimate: what a sweep will cost before it runs",
    "reports": "renderers: a SweepReport in, JSONL, JSON, Markdown, HTML, JUnit, OpenTelemetry out",
    "sweep": "one sweep in this process: lifecycle, observers, the executor seam, the local executor, the journal",
    "distributed": "the wall to Redis, Celery and kombu: submit, store, delivery, broker, shared fleet",
    "judgecheck": "farm judge-check: how far a report's judges can be trusted",
    "history": "the wall to SQL: recorded sweeps, baselines, trends, the nightly loop",
    "api": "farm test as a library: its settings, each stage's spec, prepare, run",
    "bisect": "farm bisect: the commit that made cases pass less often",
    "assess": "farm assess: a sweep's failures grouped into named failure modes",
    "view": "farm view: a read-only local web app over the history and sweeps in flight",
    "cli": "the farm command line: one module per command group, errors mapped to exit codes",
}
"""Each folder of ``farm/`` and the one kind of module it holds: a new folder must say what it is.
Listed from the ground up: a folder imports only folders listed before it."""


def test_every_folder_says_what_it_holds() -> None:
    folders = sorted(p.name for p in FARM.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert folders == sorted(FOLDERS)
    assert all(kind and "\n" not in kind for kind in FOLDERS.values())


def room_of(module: str) -> str | None:
    """The room of ``farm`` that ``module`` is in: its folder (``plan``) or a module of the hall
    (``api.py``; ``__init__.py`` for ``farm`` itself); None outside ``farm``."""
    parts = module.split(".")
    if parts[0] != "farm":
        return None
    if len(parts) == 1:
        return "__init__.py"
    return parts[1] if (FARM / parts[1]).is_dir() else f"{parts[1]}.py"


def room_imports() -> dict[tuple[str, str], list[str]]:
    """(room, room it imports) → ``file:line: module`` for each import of ``farm`` from one room into
    another: anywhere in a file (a lazy import or one under TYPE_CHECKING hides a circle, it does
    not remove it) and every ``import_module`` string."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(FARM.rglob("*.py")):
        here = room_of(module_name(path))
        for line, name in imported_names(ast.parse(path.read_text(encoding="utf-8"))):
            there = room_of(name)
            if here is not None and there is not None and there != here:
                found[(here, there)].append(f"{path.relative_to(FARM.parent)}:{line}: {name}")
    return found


def room_circles(imports: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for here, there in imports:
        graph[here].add(there)
        graph[there]
    return import_circles(graph)


def circling_imports() -> list[str]:
    """``file:line: module`` for each import between two rooms of a circle."""
    imports = room_imports()
    found = []
    for circle in room_circles(imports):
        found += [f"{' > '.join(circle)}: {where}" for (here, there), lines in sorted(imports.items())
                  if here in circle and there in circle for where in lines]
    return found


def imports_up_the_floors() -> list[str]:
    """``file:line: module`` for each import of a folder listed after the importing one in ``FOLDERS``
    (the floors, from the ground up)."""
    floors = list(FOLDERS)
    return [where for (here, there), lines in sorted(room_imports().items())
            if here in FOLDERS and there in FOLDERS and floors.index(there) > floors.index(here)
            for where in lines]


def test_no_import_runs_back_up_between_folders() -> None:
    """The folders of ``farm/`` stand on floors (README, Layout): a folder imports only folders below
    it, so no two folders import each other, even through others."""
    assert circling_imports() == []


def test_each_folder_imports_only_the_floors_below_it() -> None:
    """``FOLDERS`` is the floor order (README, Layout; the upper floors in ``farm/__init__.py``): an
    import of a folder listed later is an arrow running back up, even where it closes no circle yet."""
    assert imports_up_the_floors() == []


def test_the_floor_walk_names_an_import_running_up(tmp_path, monkeypatch) -> None:
    farm = tmp_path / "farm"
    for room in ("sweep", "history"):
        (farm / room).mkdir(parents=True)
        (farm / room / "__init__.py").write_text("")
    (farm / "sweep" / "x.py").write_text("def f():\n    import farm.history.y\n")
    monkeypatch.setattr(sys.modules[__name__], "FARM", farm)
    assert imports_up_the_floors() == ["farm/sweep/x.py:2: farm.history.y"]


def test_the_folder_walk_names_the_imports_that_close_a_circle(tmp_path, monkeypatch) -> None:
    farm = tmp_path / "farm"
    for room in ("run", "plan", "models"):
        (farm / room).mkdir(parents=True)
        (farm / room / "__init__.py").write_text("")
    (farm / "run" / "x.py").write_text("from farm.models import Case\ndef f():\n    from farm.plan.y import g\n")
    (farm / "plan" / "y.py").write_text("import farm.run.x\n")
    monkeypatch.setattr(sys.modules[__name__], "FARM", farm)
    assert circling_imports() == ["plan > run: farm/plan/y.py:1: farm.run.x",
                                  "plan > run: farm/run/x.py:3: farm.plan.y"]
