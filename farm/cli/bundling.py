"""``farm test``'s bundle (SPEC 24, ``farm.bundles``): a distributed sweep packs what its workers need
of the project, stores it once and names it on the plan. ``--no-bundle``: the shared-path mode.

What the sweep names decides the roots (``farm.bundles.roots``): the ``-i`` suites, the agent a
suite's directory finds upwards, the ``-n``, ``--simulator`` and matrix arms' references (and the
directory they resolve from), the ``--matrix`` file, the agents and
connectors directories (``FARM_AGENTS_ROOT`` / ``FARM_CONNECTORS_ROOT``, else ``./assistants`` and
``./connectors``) where they exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from farm.agents.resolve import find_manifest_upwards
from farm.api import PreparedSweep, TestSettings

if TYPE_CHECKING:
    from farm.bundles.pack import Bundle

__all__ = ["sweep_bundle"]


def sweep_bundle(prepared: PreparedSweep, settings: TestSettings, max_bytes: int | None) -> Bundle | None:
    """A distributed sweep's bundle, named on its plan; BundleTooLarge (exit 2) over the cap. None:
    an in-process sweep, ``max_bytes`` None (``--no-bundle``), or a sweep that names no file."""
    if not prepared.specs.executor.broker or max_bytes is None:
        return None
    # farm.bundles (tarfile, the project's walk) loads for a distributed sweep only: none in-process
    from farm.bundles.pack import pack
    from farm.bundles.roots import project_roots, refs_paths

    cwd = Path(settings.cwd)
    named: list[Path] = [*prepared.loaded.files]
    if prepared.loaded.root is not None:
        named.append(prepared.loaded.root)
    for directory in {path.parent for path in prepared.loaded.files}:
        manifest = find_manifest_upwards(directory)
        if manifest is not None:
            named.append(manifest)
    arms = prepared.plan.matrix.arms if prepared.plan.matrix is not None else []
    named += refs_paths((settings.name, settings.simulator, *(arm.agent for arm in arms)), cwd)
    if settings.matrix.file is not None:  # the matrix file's directory (the arms' connectors are ids)
        named.append((cwd / settings.matrix.file).expanduser())
    named += [Path(prepared.options.agents_root), Path(prepared.options.connectors_root)]
    roots = project_roots(named)
    if not roots:  # nothing of the sweep is a file (an HTTP agent, a message): nothing to carry
        return None
    bundle = pack(roots, max_bytes=max_bytes)
    prepared.plan = prepared.plan.model_copy(update={"bundle": bundle.ref})
    return bundle
