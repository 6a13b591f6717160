"""A file's lines in batches: the lines of the batches a process reads, with their numbers, the
others skipped by counting their newlines (``farm.plan.load_processes``: every reading process
is handed every line of the suite, half or more of them another's)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from io import BufferedReader

__all__ = ["SKIP_BLOCK", "numbered", "skip_lines"]

SKIP_BLOCK = 1 << 16
"""The bytes looked at at once when skipping lines (the file's buffer: open it with this many)."""


def numbered(stream: BufferedReader, batches: tuple[int, Callable[[int], bool | None]] | None
             ) -> Iterator[tuple[int, bytes]]:
    """The lines to read with their numbers (from 1): every line, or the lines of the batches
    ``(size, keep)`` wants (``keep(batch number)``: read, skip, or None: stop)."""
    if batches is None:
        yield from enumerate(stream, start=1)
        return
    size, keep = batches
    for number in itertools.count():
        wanted = keep(number) if stream.peek(1) else None  # peek: b"" at the end of the file
        if wanted is None:
            return
        if wanted:
            yield from zip(itertools.count(number * size + 1), itertools.islice(stream, size))
        else:
            skip_lines(stream, size)


def skip_lines(stream: BufferedReader, lines: int) -> None:
    """Past ``lines`` lines of ``stream`` (or to its end), its newlines counted in the buffer:
    no line is made into an object."""
    while lines:
        block = stream.peek(SKIP_BLOCK)[:SKIP_BLOCK]
        if not block:
            return
        found = block.count(b"\n")
        if found < lines:
            stream.read(len(block))
            lines -= found
            continue
        low, high, before = 0, len(block), 0  # the shortest start of block holding ``lines`` newlines
        while low < high:  # ``before``: the newlines in block[:low], so each count reads only what is new
            middle = (low + high) // 2
            upto = before + block.count(b"\n", low, middle + 1)
            if upto >= lines:
                high = middle
            else:
                low, before = middle + 1, upto
        stream.read(low + 1)
        return

