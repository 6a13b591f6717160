"""The package's walls, read from the source: what ``farm`` may import, module by module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

FARM = Path(__file__).resolve().parent.parent / "farm"


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
