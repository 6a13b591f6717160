"""A bundle's Python code under names of its own: two bundles never share an imported module.

A worker keeps every module it imported (``sys.modules``), so a ``py:`` agent edited between two
sweeps, or two sweeps in flight with two versions of one module, would otherwise meet one module
object. Code of a bundle copy (``register``) is imported under a package per (bundle, directory):
``_farm_bundle_<sha16>_<dir8>``, whose ``__path__`` is the directory the reference resolves from.
A module's ``import helpers`` or ``from pkg import x`` of a neighbour then imports
``_farm_bundle_….helpers``: each module of a bundle gets builtins whose ``__import__`` maps the
top-level names its directory holds (a ``.py`` file or a package) into that package; any other
import (the standard library, third-party packages the workers install) is the usual one.
Relative imports work as in a package. ``importlib.import_module("helpers")`` is not mapped.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from pathlib import Path
from typing import Any

__all__ = ["BundleNamespace", "namespace_for", "register"]

PREFIX = "_farm_bundle_"
FARM_PACKAGES = frozenset({"farm", "workers"})
"""Top-level names a bundle's code always imports from the worker: the farm's interface."""
_copies: dict[Path, str] = {}
"""Each registered copy's directory → its bundle's short hash."""
_spaces: dict[str, BundleNamespace] = {}
_lock = threading.RLock()


def register(copy: Path, short: str) -> None:
    """Code under ``copy`` (a bundle's copy) is imported under the bundle's names from now on."""
    with _lock:
        _copies[copy.resolve()] = short
        _install()


def namespace_for(base: Path) -> BundleNamespace | None:
    """The namespace code resolved from ``base`` imports under; None when ``base`` is in no bundle."""
    if not _copies:
        return None
    resolved = base.resolve()
    with _lock:  # a pool thread may register another bundle meanwhile
        for copy, short in _copies.items():
            if resolved == copy or copy in resolved.parents:
                name = f"{PREFIX}{short}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}"
                space = _spaces.get(name)
                if space is None:
                    space = _spaces[name] = BundleNamespace(name, resolved)
                return space
    return None


class BundleNamespace:
    """The package a bundle directory's modules are imported under, and their builtins."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name, self.directory = name, directory
        self._holds: dict[str, bool] = {}
        package = types.ModuleType(name)
        package.__path__ = [str(directory)]
        package.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        package.__spec__.submodule_search_locations = [str(directory)]
        sys.modules[name] = package
        self.builtins = dict(builtins.__dict__, __import__=self._import)

    def holds(self, top: str) -> bool:
        """Whether the directory holds a module or package named ``top`` (never the farm's own:
        an agent's ``Reply`` must be the worker's class, even from a bundle of the farm's repo)."""
        found = self._holds.get(top)
        if found is None:
            found = self._holds[top] = top not in FARM_PACKAGES and (
                (self.directory / f"{top}.py").is_file() or (self.directory / top / "__init__.py").is_file())
        return found

    def module(self, dotted: str) -> Any:
        """``dotted`` (``pkg.mod``) imported from the directory under this namespace."""
        return importlib.import_module(f"{self.name}.{dotted}")

    def _import(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and name and self.holds(name.partition(".")[0]):
            found = _original_import(f"{self.name}.{name}", globals, locals, fromlist, 0)
            return found if fromlist else sys.modules[f"{self.name}.{name.partition('.')[0]}"]
        return _original_import(name, globals, locals, fromlist, level)


_original_import = builtins.__import__


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``_farm_bundle_….x`` in its namespace's directory; its loader gives the module the
    namespace's builtins."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(PREFIX) or "." not in fullname:
            return None
        space = _spaces.get(fullname.partition(".")[0])
        if space is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, space.builtins)
        return spec


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any, names: dict[str, Any]) -> None:
        self._inner, self._names = inner, names

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = self._names
        self._inner.exec_module(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename…: tracebacks read the file
        if name.startswith("__") or name == "_inner":  # never our own attributes (copy, pickle)
            raise AttributeError(name)
        return getattr(self._inner, name)


_finder = _Finder()


def _install() -> None:
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
