"""``farm assess``'s failure modes remembered per case in the history store (SPEC 14.3).

``HistoryModes`` is the history's ``farm.assess.ModeMemory``: every mode a case was found to fail
in, oldest first, with when it was first seen, in ``farm_failure_modes``. Whoever assesses a
case later (another machine, another day) is offered the same numbered list, so the same
failures get the same modes, and a mode the list did not have is a new finding. Two assessments
remembering the same mode at once store it once (insert or ignore on the case and the mode's hash).
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Engine, select

from farm.history.engine import open_engine
from farm.history.record import insert_or_ignore, now_utc
from farm.history.tables import failure_modes

__all__ = ["HistoryModes"]


def _digest(mode: str) -> str:
    return hashlib.sha256(mode.encode("utf-8")).hexdigest()


class HistoryModes:
    """Known failure modes in the history database (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str) -> HistoryModes:
        """The modes of the history at ``url``, migrated to the newest schema.

        Raises:
            SettingsError: a bad URL. FarmRuntimeError: the database cannot be reached.
        """
        return cls(open_engine(url))

    def known(self, case_id: str) -> list[str]:
        query = select(failure_modes.c.mode).where(failure_modes.c.case_id == case_id).order_by(failure_modes.c.id)
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def remember(self, case_id: str, modes: list[str]) -> None:
        rows = [{"case_id": case_id, "mode_hash": _digest(mode), "mode": mode, "first_seen_at": now_utc()}
                for mode in dict.fromkeys(modes)]
        if not rows:
            return
        with self.engine.begin() as conn:
            for row in rows:  # one by one, in order: ids keep the order the modes were found in
                conn.execute(insert_or_ignore(conn, failure_modes).values(row))

    def close(self) -> None:
        self.engine.dispose()
