"""Bundles (SPEC 24): what a distributed sweep's workers need of the submitter's project, carried
through the store instead of a shared volume.

- ``BundleRef``, the plan's typed field naming a bundle (its sha256, the roots it holds), is data:
  ``farm.models.bundle``.
- ``roots``: which directories a sweep's bundle holds (``project_roots``).
- ``files``: the files of a root (git's own listing, ``.gitignore`` and ``.farmignore`` respected).
- ``pack``: the deterministic archive, its hash and its cap (``pack``, ``BundleTooLarge``).
- ``unpack``: a worker's copy, verified and unpacked once (``unpacked``).
- ``relocate``: a plan's and a case's paths moved from the submitter's roots to the worker's copy.

A bundle's Python modules are imported under names of their own (two bundles never share one) by
``farm.imports.namespaces``, beside the importing of user code it serves (``farm.imports``).
"""
