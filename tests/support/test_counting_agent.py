"""The counting agent itself (``tests/support/counting_agent.py``): it counts each call per (case, run),
answers as the function it wraps, and its check fails on a run called twice (or it could not
catch a run paid twice on the fleet)."""

from __future__ import annotations

import importlib.util
from types import ModuleType, SimpleNamespace

import pytest


def _load(ref: str) -> ModuleType:
    path = ref.removeprefix("py:").rsplit(":", 1)[0]
    spec = importlib.util.spec_from_file_location("counting_agent_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_it_counts_each_run_answers_as_the_wrapped_function_and_catches_a_repeat(counting_agent) -> None:
    agent = counting_agent(faults=True)  # this test calls a run twice on purpose
    respond = _load(agent.ref).respond
    messages = [{"role": "user", "content": "hi"}]
    answers = [respond(messages, SimpleNamespace(case_id="c", run=n, turn=1)) for n in (1, 2, 3)]
    assert answers == ["ok: hi", "ok: hi", "no"]  # tests/agents/distributed.py:by_run's
    agent.assert_once_each(3)
    with pytest.raises(AssertionError, match="3 calls for 2 runs"):
        agent.assert_once_each(2)
    respond(messages, SimpleNamespace(case_id="c", run=2, turn=1))
    assert agent.counts()[("c", 2)] == 2
    with pytest.raises(AssertionError, match=r"called more than once: \{\('c', 2, 1\): 2\}"):
        agent.assert_once_each(4)
    agent.clear()
    with pytest.raises(AssertionError, match="yet runs were called more than once"):
        agent.assert_never_repeated()  # the fixture's check at teardown still sees the count cleared
    assert agent.calls == 0 and agent.counts() == {}
    respond(messages, SimpleNamespace(case_id="c", run=2, turn=1))  # a new sweep's run 2: counted anew
    agent.assert_once_each(1)
    respond(messages, SimpleNamespace(case_id="c", run=2, turn=2))  # its second turn: the same run, no repeat
    agent.assert_once_each(1)
