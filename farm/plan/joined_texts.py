"""Many short strings held a batch to a string: what a distributed submitter keeps of a million cases.

A ``str`` object costs ~50 bytes besides its text and 8 more for its place in a list: a compact
plan's two short strings a case (its stored form, ~50 characters, and its index line, ~15) took
~180 bytes a case, 180 MB of a million-case submitter (issue 32). ``JoinedTexts`` keeps each
batch's strings joined in one string with where each ends (4 bytes): ~75 bytes a case. A string
is sliced out again when it is read. Pure.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from typing import overload


class JoinedTexts(Sequence[str]):
    """A list of strings, appended a batch at a time (``extend``), read as a ``Sequence[str]``."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._joined: list[str] = []
        self._ends: list[array[int]] = []
        """Where each string of a batch ends in its joined string."""
        self._firsts: list[int] = []
        """The index of each batch's first string."""
        self._length = 0
        self.extend(texts)

    def extend(self, texts: Iterable[str]) -> None:
        """Append ``texts`` as one batch."""
        batch = list(texts)
        if batch:
            self._joined.append("".join(batch))
            self._ends.append(array("I", accumulate(map(len, batch))))
            self._firsts.append(self._length)
            self._length += len(batch)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._length))]
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError("JoinedTexts index out of range")
        batch = bisect_right(self._firsts, i) - 1
        ends, k = self._ends[batch], i - self._firsts[batch]
        return self._joined[batch][ends[k - 1] if k else 0:ends[k]]

    def __iter__(self) -> Iterator[str]:
        for joined, ends in zip(self._joined, self._ends, strict=True):
            start = 0
            for end in ends:
                yield joined[start:end]
                start = end

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"JoinedTexts({list(self)!r})"


__all__ = ["JoinedTexts"]
