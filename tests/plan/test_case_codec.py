"""Stored cases deflated with their sweep's dictionary (``farm.plan.case_codec``): exact round trips,
a fraction of the size for cases alike, plain JSON of an older sweep still read."""

from __future__ import annotations

import base64
import json
import zlib

from hypothesis import given
from hypothesis import strategies as st

from farm.plan.case_codec import PREFIX, PREFIX_ZLIB, CaseCodec


def _case(i: int) -> str:
    return json.dumps({"id": f"C{i:07d}", "turns": [{"messages": [{"role": "user", "content": f"say pong {i}"}]}],
                       "assertions": [{"type": "contains", "value": "pong"}], "plan": {"runs": 1}})


@given(st.text(max_size=2000), st.binary(max_size=300))
def test_any_text_comes_back_exactly(text: str, dictionary: bytes) -> None:
    codec = CaseCodec(dictionary)
    stored = codec.encode(text)
    assert stored.startswith(PREFIX) and stored.isascii()
    assert codec.decode(stored) == text
    assert CaseCodec.from_text(codec.text()).decode(stored) == text  # the dictionary as stored in Redis


def test_cases_alike_shrink_to_a_fraction_and_plain_json_still_reads() -> None:
    codec = CaseCodec(_case(0).encode())
    later = _case(123456)
    assert len(codec.encode(later)) < len(later) / 3
    assert codec.decode(later) == later  # a sweep stored before cases were deflated


def test_a_case_stored_in_format_1_still_reads() -> None:
    """Format 1 (a zlib stream at level 6), written by the farm before format 2."""
    dictionary, later = _case(0).encode(), _case(42)
    deflate = zlib.compressobj(6, zdict=dictionary)
    old = PREFIX_ZLIB + base64.b85encode(deflate.compress(later.encode()) + deflate.flush()).decode("ascii")
    assert CaseCodec(dictionary).decode(old) == later
    assert CaseCodec(dictionary).encode(later).startswith(PREFIX) and PREFIX != PREFIX_ZLIB
