"""Where the history lives: ``--history URL``, else ``FARM_HISTORY_URL``, else a SQLite file.

The SQLite file is ``$FARM_DATA_DIR/history.sqlite``; ``FARM_DATA_DIR`` defaults to
``~/.local/share/agent-farm`` (SPEC 10). Kept apart from ``engine.py`` so that deciding where
the history is costs no SQLAlchemy import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from farm.settings import data_dir

HISTORY_FILE = "history.sqlite"


def given_history_url(flag: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The history URL the user chose: the ``--history`` flag, else ``FARM_HISTORY_URL``; else None."""
    env = os.environ if env is None else env
    return flag or env.get("FARM_HISTORY_URL") or None


def history_url(flag: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The history URL: the one the user chose, else the default SQLite file."""
    env = os.environ if env is None else env
    return given_history_url(flag, env) or f"sqlite:///{data_dir(env) / HISTORY_FILE}"
