"""Stored cases, compact: each case's JSON deflated with a dictionary shared by its sweep.

A distributed sweep stores every planned case on its own in Redis (``farm.distributed.store.sweep_store``): at a million
cases their JSON (~1.2 KB each, mostly the same keys, agent and checks) was most of Redis's
memory. Cases of one suite look alike, so zlib with a preset dictionary (the sweep's first case)
brings each to a small fraction; base64 keeps it text for a client that decodes responses.

A stored value that does not carry the prefix is plain JSON (a sweep stored before this), and
is read as it is. Pure: no Redis here.
"""

from __future__ import annotations

import base64
import zlib

PREFIX = "z2:"
"""Marks a deflated case (format 2: raw deflate, level 1, with the sweep's dictionary, then base64:
C-coded, where the standard library's base85 is Python, ~6 µs a case)."""

PREFIX_ZLIB = "z1:"
"""Format 1 (zlib stream, level 6, base85), written before format 2 and still read."""

MAX_DICTIONARY = 32 * 1024
"""zlib uses at most the last 32 KB of a preset dictionary."""

LEVEL = 1
"""Cases alike compress about as well at level 1 as at 6 (49 vs 43 bytes here), in less time."""
RAW = -15
"""Raw deflate, 32 KB window: no zlib header or checksum to store per case."""
MEM_LEVEL = 4
"""A smaller hash table: set up per case, it costs more than it saves on a 1 KB text."""


class CaseCodec:
    """Encodes and decodes one sweep's stored cases with its dictionary."""

    def __init__(self, dictionary: bytes) -> None:
        self.dictionary = dictionary[-MAX_DICTIONARY:]

    @classmethod
    def from_text(cls, text: str) -> CaseCodec:
        """The codec of a dictionary as stored (``text``)."""
        return cls(base64.b85decode(text))

    def text(self) -> str:
        """The dictionary, as stored beside the sweep's plan."""
        return base64.b85encode(self.dictionary).decode("ascii")

    def encode(self, case_json: str) -> str:
        if self.dictionary:
            deflate = zlib.compressobj(LEVEL, zlib.DEFLATED, RAW, MEM_LEVEL, zdict=self.dictionary)
        else:
            deflate = zlib.compressobj(LEVEL, zlib.DEFLATED, RAW, MEM_LEVEL)
        data = deflate.compress(case_json.encode("utf-8")) + deflate.flush()
        return PREFIX + base64.b64encode(data).decode("ascii")

    def decode(self, stored: str) -> str:
        if stored.startswith(PREFIX):
            wbits, data = RAW, base64.b64decode(stored[len(PREFIX):])
        elif stored.startswith(PREFIX_ZLIB):
            wbits, data = zlib.MAX_WBITS, base64.b85decode(stored[len(PREFIX_ZLIB):])
        else:
            return stored  # plain JSON: stored before cases were deflated
        inflate = zlib.decompressobj(wbits, zdict=self.dictionary) if self.dictionary else zlib.decompressobj(wbits)
        return (inflate.decompress(data) + inflate.flush()).decode("utf-8")


__all__ = ["PREFIX", "PREFIX_ZLIB", "CaseCodec"]
