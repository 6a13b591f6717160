"""The counting agent, a shared fixture (issue 37: with no fault injected, no run's agent is called twice).

``counting_agent()`` writes a ``py:`` agent file that notes every call's (case, run, turn) in a log
and then answers as the function it wraps would (``tests/agents/distributed.py:by_run`` unless told):
the agent runs in ``farm worker`` processes, so the log is a file, one JSON line appended per call.
The test reads ``counts()`` (calls of each run's first turn: the runs that called the agent) and
asserts with ``assert_once_each(runs)``: no (case, run, turn) called twice, as many runs called
as runs counted. At teardown the fixture checks again that no (case, run) was
called twice, unless the agent was made with ``faults=True`` (a test that kills workers: a run in
flight on the killed one is called again elsewhere, by design). ``clear()`` starts a new count
(the same agent reused by a second sweep, whose runs have the same (case, run) keys).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.servers import ROOT

DEFAULT_ANSWER = "tests/agents/distributed.py:by_run"

AGENT = '''
import importlib.util, inspect, json, os, time

LOG = {log!r}
_spec = importlib.util.spec_from_file_location("_counted_answer", {target!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
_answer = getattr(_module, {function!r})
_TAKES_CONTEXT = len(inspect.signature(_answer).parameters) > 1  # respond(messages) or respond(messages, context)


def respond(messages, context):
    """Note the call first (a call that hangs or dies still counts), then answer as the wrapped function."""
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:  # one write of one short line with O_APPEND: lines of concurrent processes never interleave
        os.write(fd, (json.dumps([context.case_id, context.run, context.turn]) + "\\n").encode())
    finally:
        os.close(fd)
    time.sleep({delay_s!r})
    return _answer(messages, context) if _TAKES_CONTEXT else _answer(messages)
'''


@dataclass
class CountingAgent:
    """A ``py:`` agent (``ref``) whose calls are counted per (case, run, turn) in ``directory``."""

    ref: str
    directory: Path
    faults: bool = False
    """Faults are injected (workers killed): a (case, run) may be called again, the teardown allows it."""
    _cleared: list[Path] = field(default_factory=list)

    @property
    def log(self) -> Path:
        """Where the agent notes its calls (each clear() moves it aside)."""
        return self.directory / "calls.jsonl"

    def counts(self) -> Counter[tuple[str, int]]:
        """Calls of each (case, run) since the last ``clear()``: of its first turn (a dynamic or
        multi-turn run calls once a turn; ``repeated`` looks at every turn)."""
        return Counter({(case, run): n for (case, run, turn), n in _read(self.log).items() if turn == 1})

    @property
    def calls(self) -> int:
        """Runs that called the agent (their first turn), a repeat counted as often as it came."""
        return sum(self.counts().values())

    def repeated(self) -> dict[tuple[str, int, int], int]:
        """The (case, run, turn) called more than once since the last ``clear()``."""
        return {key: n for key, n in _read(self.log).items() if n > 1}

    def assert_once_each(self, runs: int) -> None:
        """No (case, run) called twice, and one call per run: ``runs`` calls in all."""
        counts = self.counts()
        figures = f"{sum(counts.values())} calls for {runs} runs"
        print(f"counting agent: {figures}")  # the figure the test saw (pytest -rP shows it)
        assert not self.repeated(), f"{figures}; called more than once: {self.repeated()}"
        assert sum(counts.values()) == runs, figures

    def clear(self) -> None:
        """Count anew from here, between sweeps (the counts so far stay checked at teardown)."""
        if self.log.exists():
            kept = self.directory / f"calls-{len(self._cleared)}.jsonl"
            self.log.rename(kept)
            self._cleared.append(kept)

    def assert_never_repeated(self) -> None:
        """No (case, run) called twice in any count since the agent was made (the teardown's check)."""
        for log in [*self._cleared, self.log]:
            again = {key: n for key, n in _read(log).items() if n > 1}
            assert not again, f"no fault was injected, yet runs were called more than once: {again}"


def _read(log: Path) -> Counter[tuple[str, int, int]]:
    if not log.exists():
        return Counter()
    rows = (json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line)
    return Counter((str(case), int(run), int(turn)) for case, run, turn in rows)


@pytest.fixture
def counting_agent(tmp_path: Path) -> Iterator[Callable[..., CountingAgent]]:
    """Make counting agents: ``counting_agent(answer="FILE.py:FUNCTION", delay_s=0.0, faults=False)``."""
    made: list[CountingAgent] = []

    def create(answer: str = DEFAULT_ANSWER, *, delay_s: float = 0.0, faults: bool = False) -> CountingAgent:
        path, function = answer.rsplit(":", 1)
        directory = tmp_path / f"counting-agent-{len(made)}"
        directory.mkdir()
        agent_file = directory / "agent.py"
        agent = CountingAgent(f"py:{agent_file}:respond", directory, faults)
        agent_file.write_text(AGENT.format(log=str(agent.log), target=str(ROOT / path),
                                           function=function, delay_s=delay_s), encoding="utf-8")
        made.append(agent)
        return agent

    yield create
    for agent in made:
        if not agent.faults:
            agent.assert_never_repeated()
