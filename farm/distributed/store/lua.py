"""The store's atomic steps, as Lua scripts that ``farm.distributed.store.sweep_store.SweepStore`` registers
(the ``.lua`` files beside this module; ``lua_script`` reads them, and the fleet's and the broker's).

Every write that must happen once runs on the Redis server in one step: a run stored
set-if-absent with its bit set in the case's ``settled`` bitfield and its event streamed, a case's
statistics and the report stored once, the leases (publisher, reconciler) renewed and released
only by their holder, the publish cursor moved only forward.
"""

from __future__ import annotations

from importlib import resources

CASE_HEAD_BITS = 96
"""A case's ``settled`` key is a bitfield: three unsigned 32-bit counters (``#0`` runs settled,
``#1`` runs counted, ``#2`` runs passed), then run n's settled bit at ``CASE_HEAD_BITS + n``. One
``BITFIELD`` call sets a run's bit and moves the counters (issue 32: it was SETBIT, BITCOUNT and
two HINCRBY of a tally hash)."""

def lua_script(package: str, *names: str, head: str = "") -> str:
    """The Lua files ``names`` that stand beside ``package``'s modules, joined in order after
    ``head``: read once, when the module that runs them is imported, from the installed package
    (pyproject's package data carries ``*.lua``). Each file's header names its KEYS and ARGV."""
    folder = resources.files(package)
    return head + "".join(folder.joinpath(name).read_text(encoding="utf-8") for name in names)


_HERE = "farm.distributed.store"
_CASE_HEAD = f"local CASE_HEAD_BITS = {CASE_HEAD_BITS}\n"
"""Before ``case_head.lua``: a run's bit in its case's bitfield is ``CASE_HEAD_BITS + n``."""

SETTLE_LUA = lua_script(_HERE, "case_head.lua", "settle.lua", head=_CASE_HEAD)
"""A run settled without being stored (dropped), or a stored run's barrier looked at again."""
BEGIN_RUN_LUA = lua_script(_HERE, "begin_run.lua")
"""A run begun: its marker is its lease, its sign of life and its crash record."""
STORE_RUN_LUA = lua_script(_HERE, "case_head.lua", "store_run.lua", head=_CASE_HEAD)
"""A run stored once, its bit set in its case's bitfield and its event streamed."""
STORE_CASE_LUA = lua_script(_HERE, "store_case.lua")
"""A case's statistics stored once."""
STORE_REPORT_LUA = lua_script(_HERE, "store_report.lua")
"""A sweep's report stored once."""
RENEW_LUA = lua_script(_HERE, "renew.lua")
"""A lease renewed by its holder only."""
RELEASE_LUA = lua_script(_HERE, "release.lua")
"""A key (a lease, a judge cache claim) released by its holder only."""
CURSOR_LUA = lua_script(_HERE, "cursor.lua")
"""The publish cursor, moved only forward."""


__all__ = [
    "CASE_HEAD_BITS",
    "CURSOR_LUA",
    "RELEASE_LUA",
    "RENEW_LUA",
    "SETTLE_LUA",
    "STORE_CASE_LUA",
    "STORE_REPORT_LUA",
    "STORE_RUN_LUA",
    "lua_script",
]
