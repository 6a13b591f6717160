"""The chaos provider's dice: faults at configured rates and answers right with a probability,
seeded so that a test (or a user rehearsing a sweep) knows in advance what the server will do.

``openai_server.py --fault-rate 429=0.1 --fault-rate stall=0.1 --seed 7`` draws, for the n-th
request of each fault key (the ``X-Fault-Key`` header, else the last user message), one number
``unit(seed, "fault", key, n)`` in [0, 1) and answers by where it falls among the rates, in this
order: ``429`` (with ``Retry-After: 1``), ``5xx`` (503 with ``Retry-After: 1``), ``quota`` (429
``insufficient_quota``), ``stall`` (the right answer after ``--stall-s`` seconds), ``drop`` (the
connection closed before any answer); past them all, a normal answer.

Answers right with a probability ``p``: the model ``right-<p>`` (``right-0.7``) or the request's
``metadata.p_right``. The m-th answered request of a key is right when ``unit(seed, "right", key,
m) < p`` (the last user message echoed), else ``wrong: <message>``. Faults and answers are drawn
from separate streams, so however the faults fall, a key's first R answers hold exactly
``expected_right(seed, key, p, R)`` right ones: a sweep of R runs per case must count exactly
that many passes, no run lost or doubled. Standard library only.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter

KINDS = ("429", "5xx", "quota", "stall", "drop")


def unit(seed: int, *parts: object) -> float:
    """A uniform number in [0, 1) fixed by the seed and the parts."""
    digest = hashlib.sha256("\x1f".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def expected_right(seed: int, key: str, p: float, answers: int) -> int:
    """How many of a key's first ``answers`` answers are right."""
    return sum(1 for m in range(1, answers + 1) if unit(seed, "right", key, m) < p)


def parse_rate(text: str) -> tuple[str, float]:
    """``429=0.1`` → ("429", 0.1); ValueError naming the problem."""
    kind, _, value = text.partition("=")
    if kind not in KINDS:
        raise ValueError(f"--fault-rate {text!r}: unknown fault {kind!r} (known: {', '.join(KINDS)})")
    rate = float(value)
    if not 0 <= rate <= 1:
        raise ValueError(f"--fault-rate {text!r}: a rate is between 0 and 1")
    return kind, rate


class Chaos:
    """The seeded dice of one server (thread-safe: the server answers on many threads)."""

    def __init__(self, rates: dict[str, float], seed: int = 0, stall_s: float = 2.0) -> None:
        if sum(rates.values()) > 1:
            raise ValueError("--fault-rate: the rates add up to more than 1")
        self.rates = rates
        self.seed = seed
        self.stall_s = stall_s
        self._lock = threading.Lock()
        self._attempts: Counter[str] = Counter()
        self._answers: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        """Faults injected so far, by kind (``GET /stats`` shows them)."""

    def fault(self, key: str) -> str | None:
        """The fault for this request of ``key`` (one of ``KINDS``), or None: answer."""
        with self._lock:
            self._attempts[key] += 1
            draw = unit(self.seed, "fault", key, self._attempts[key])
            edge = 0.0
            for kind in KINDS:
                edge += self.rates.get(kind, 0.0)
                if draw < edge:
                    self.faults[kind] += 1
                    return kind
            return None

    def right(self, key: str, p: float) -> bool:
        """Whether this answer of ``key`` is right (the key's answers are counted here)."""
        with self._lock:
            self._answers[key] += 1
            return unit(self.seed, "right", key, self._answers[key]) < p
