"""farm.collector: the cyclic collector paused while a suite loads, eased while runs run."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from farm import collector


def test_paused_disables_collection_and_restores_it() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_eased_freezes_what_is_alive_and_raises_the_young_threshold_until_the_last_user_ends() -> None:
    before = gc.get_threshold()
    kept = [object() for _ in range(10)]  # alive before: left out of collections while eased
    entered, leave = threading.Event(), threading.Event()

    def other_sweep() -> None:
        with collector.eased():
            entered.set()
            leave.wait(10)

    with collector.eased():
        assert gc.get_threshold()[0] == max(collector.YOUNG_GENERATION, before[0])
        assert gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > 0
        thread = threading.Thread(target=other_sweep)
        thread.start()
        assert entered.wait(10)
    assert gc.get_threshold()[0] == max(collector.YOUNG_GENERATION, before[0])  # the other sweep still runs
    leave.set()
    thread.join(10)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert len(kept) == 10


def test_a_sweep_runs_eased_and_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    from farm import TestSettings, run_sweep

    seen = tmp_path / "thresholds.txt"
    (tmp_path / "agent.py").write_text(
        "import gc\n"
        "async def respond(messages):\n"
        f"    with open({str(seen)!r}, 'a') as f:\n"
        "        f.write(str(gc.get_threshold()[0]) + chr(10))\n"
        "    return 'pong'\n")
    case = '{"id": "a", "input": "ping", "assert": {"type": "contains", "value": "pong"}}'
    (tmp_path / "suite.jsonl").write_text(case + "\n")
    before = gc.get_threshold()
    report = run_sweep(TestSettings(input=str(tmp_path / "suite.jsonl"), name="py:agent.py:respond", runs=3,
                                    cwd=str(tmp_path)))
    assert report.summary.by_status.get("passed") == 3
    assert seen.read_text().split() == [str(max(collector.YOUNG_GENERATION, before[0]))] * 3
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_what_was_made_while_paused_is_frozen_not_left_to_the_next_young_collection() -> None:
    """Left young, a command's imports (or a loaded suite) were all scanned by the first young
    collection after the pause: 28 ms of a ``farm test`` process. Frozen, no collection scans them;
    ``eased``'s end unfreezes them with the rest."""
    before = gc.get_freeze_count()
    with collector.paused():
        kept = [[n] for n in range(20_000)]
    assert gc.get_freeze_count() >= before + 20_000
    assert gc.get_count()[0] < 1_000  # the young generation starts again nearly empty
    with collector.eased():
        pass
    assert gc.get_freeze_count() == 0
    assert len(kept) == 20_000
