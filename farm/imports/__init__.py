"""Importing user code by reference: ``module:function``, ``path/file.py:function``, ``module.function``.

Shared by python agents and ``script`` checks. Thread-safe (Celery worker threads resolve the
same agent at once) and cached. A file is loaded under a name unique to its path, so two
suites' ``rules.py`` or ``agent.py`` never collide in ``sys.modules``.

Code of a bundle's copy on a worker (``farm.imports.namespaces``) imports its neighbours and its
packages under the bundle's own names: two bundles never share a module.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from farm.imports.namespaces import namespace_for

__all__ = ["call_user", "resolve_callable"]

_cache: dict[tuple[str, str], Callable[..., Any]] = {}
_lock = threading.RLock()


def resolve_callable(ref: str, base_dir: str | Path = "") -> Callable[..., Any]:
    """Return the callable ``ref`` names, importing it if needed.

    Raises:
        ValueError: the reference is malformed, the module or file cannot be imported, or
            the name is missing or not callable. The message says which.
    """
    key = (str(base_dir), ref)
    with _lock:
        if key not in _cache:
            _cache[key] = _resolve(ref, Path(base_dir) if base_dir else Path.cwd())
        return _cache[key]


def _resolve(ref: str, base: Path) -> Callable[..., Any]:
    if not isinstance(ref, str) or not ref.strip():
        raise ValueError("empty reference (expected module:function or file.py:function)")
    target, sep, name = ref.strip().rpartition(":")
    if not sep:  # the Yao design's dotted form: scripts.test.Assert
        target, sep, name = ref.strip().rpartition(".")
    if not sep or not target or not name:
        raise ValueError(f"bad reference {ref!r} (expected module:function or file.py:function)")
    module = _load_file(base, target) if target.endswith(".py") else _import_module(base, target)
    fn = getattr(module, name, None)
    if fn is None:
        raise ValueError(f"{ref!r}: {target} has no attribute {name!r}")
    if not callable(fn):
        raise ValueError(f"{ref!r}: {name!r} is not callable")
    return fn  # type: ignore[no-any-return]


def _load_file(base: Path, target: str) -> Any:
    path = Path(target) if Path(target).is_absolute() else base / target
    if not path.is_file():
        raise ValueError(f"file not found: {path}")
    return _exec_file(path, base)


def _exec_file(path: Path, base: Path) -> Any:
    # A unique module name per file, so two suites' checks.py never collide.
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    mod_name = f"_farm_script_{path.stem}_{digest}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    space = namespace_for(base)
    if space is not None:  # a bundle's: its neighbours are imported under the bundle's names
        module.__dict__["__builtins__"] = space.builtins
    sys.modules[mod_name] = module
    try:
        with _on_sys_path(base) if space is None else contextlib.nullcontext():  # so it imports its neighbours
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[mod_name]
        raise ValueError(f"cannot import {path}: {type(exc).__name__}: {exc}") from None
    return module


def _import_module(base: Path, target: str) -> Any:
    # A module that lives beside the suite is loaded from its file under a unique name: a
    # plain import would return another suite's module of the same name from sys.modules.
    relative = Path(*target.split("."))
    space = namespace_for(base)
    for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
        if candidate.is_file() and space is not None:  # a bundle's module, with its package
            try:
                return space.module(target)
            except (Exception, SystemExit) as exc:
                raise ValueError(f"cannot import module {target!r}: {type(exc).__name__}: {exc}") from None
        if candidate.is_file():
            return _exec_file(candidate, base)
    try:
        with _on_sys_path(base):
            return importlib.import_module(target)
    except (Exception, SystemExit) as exc:
        raise ValueError(f"cannot import module {target!r}: {type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def _on_sys_path(base: Path) -> Iterator[None]:
    entry = str(base.resolve())
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


async def call_user(fn: Callable[..., Any], *args: Any) -> Any:
    """Call user code (a script, a hook): ``async def`` awaited, a plain function in a thread.

    A plain function returning an awaitable has that awaited too. Exceptions propagate.
    """
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        result = await result
    return result
