"""A case's fingerprint: a digest of the test as written, so a comparison can say it changed.

What the case sends and checks counts (turns, checks, input, expected, timeouts, success ratio,
skip, agent, metadata); where it sits does not (file, line, suite name, directory), so moving a
suite or inserting a line above a case leaves its fingerprint alone.
"""

from __future__ import annotations

import hashlib
import json

from farm.models import Case, own_case_id

_WHERE_FIELDS = frozenset({"source", "line", "suite", "base_dir", "arm", "arm_options"})
"""Where a case sits, and a matrix arm's copy of it (the same test in every arm)."""

FINGERPRINT_CHARS = 16
"""Hex characters kept (64 bits: collisions among one suite's cases are not a concern)."""


def case_fingerprint(case: Case) -> str:
    """Hex digest of the case's content, independent of where the case is written."""
    content = case.model_dump(mode="json", exclude=set(_WHERE_FIELDS))
    if case.arm:
        content["id"] = own_case_id(case.id, case.arm)
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=FINGERPRINT_CHARS // 2).hexdigest()
