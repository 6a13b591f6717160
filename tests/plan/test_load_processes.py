"""A large suite read by several processes (``farm.plan.load_processes``) gives the plan, the ids, the
problems (in order, duplicates last), the notes and the errors one process gives.

Batches of 4 lines and no size threshold here, so that a small suite is split between forked
processes and every rule that spans the suite crosses processes; the last test runs the command
on a suite over the real threshold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from farm.api import PreparedSweep, TestSettings, prepare_sweep
from farm.api import prepare as sweep
from farm.errors import FarmRuntimeError, InputError, SettingsError, SuiteError
from farm.plan import load_processes
from farm.suites import open_input

AGENT = "py:tests/agents/distributed.py:by_run"
HOCON = {"success_ratio": "2/3", "interactions": [{"text": "hi", "response": {"text": {"keywords": "hi"}}}]}


def write(path: Path, *lines: Any) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def case(i: int, **more: Any) -> dict[str, Any]:
    return {"id": f"C{i:03d}", "input": f"ping {i}", **more}


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep, "PLAN_BATCH", 4)
    monkeypatch.setattr(load_processes, "PARALLEL_MIN_BYTES", 0)


def prepared(monkeypatch: pytest.MonkeyPatch, processes: int, **settings: Any) -> PreparedSweep:
    monkeypatch.setenv("FARM_LOAD_PROCESSES", str(processes))
    return prepare_sweep(TestSettings(name=AGENT, **settings))


def raised(monkeypatch: pytest.MonkeyPatch, processes: int, **settings: Any) -> InputError:
    with pytest.raises(InputError) as info:
        prepared(monkeypatch, processes, **settings)
    return info.value


def suite_dir(tmp_path: Path) -> Path:
    """Two JSONL files of several batches each (comments, skips, timeouts) and a HOCON case."""
    root = tmp_path / "suites"
    root.mkdir()
    write(root / "a.jsonl", *(case(i, timeout=1 + i % 7) for i in range(23)), "// a comment", case(23, skip=True))
    write(root / "b.jsonl", *(case(100 + i) for i in range(9)))
    (root / "c.hocon").write_text(json.dumps(HOCON), encoding="utf-8")
    return root


@pytest.mark.parametrize("processes", [2, 3])
def test_collect_only_lists_the_same_ids_and_totals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    processes: int) -> None:
    root = suite_dir(tmp_path)
    monkeypatch.setenv("FARM_LOAD_PROCESSES", str(processes))
    assert load_processes.load_processes(open_input(str(root))) == processes  # not read alone
    alone = prepared(monkeypatch, 1, input=str(root), runs=None, collect_only=True)
    shared = prepared(monkeypatch, processes, input=str(root), collect_only=True)
    assert shared.listed == alone.listed and alone.listed is not None and len(alone.listed) == 34
    for name in ("total_cases", "total_runs", "runs_per_case", "max_case_timeout_s", "agent_label"):
        assert getattr(shared.plan, name) == getattr(alone.plan, name), name
    assert shared.loaded.notes == alone.loaded.notes


def test_a_compact_plan_holds_the_same_stored_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = suite_dir(tmp_path)
    settings = {"input": str(root), "runs": 3, "broker": "redis://127.0.0.1:1/0", "patterns": ("C0", "C1")}
    alone, shared = prepared(monkeypatch, 1, **settings).plan, prepared(monkeypatch, 2, **settings).plan
    assert [c.model_dump() for c in shared.cases] == [c.model_dump() for c in alone.cases]
    assert shared.cases.slot_lines == alone.cases.slot_lines  # type: ignore[attr-defined]
    assert shared.cases.stored == alone.cases.stored  # type: ignore[attr-defined]  # one dictionary
    # the HOCON case "c" is not selected; the skipped case plans one run
    assert (shared.total_cases, shared.total_runs) == (alone.total_cases, alone.total_runs) == (33, 97)


def test_every_problem_is_listed_in_order_duplicates_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "suites"
    root.mkdir()
    lines: list[Any] = [case(i) for i in range(30)]
    lines[5], lines[9], lines[10], lines[22] = "oops", case(2), case(9, timeout="soon"), {"id": "x"}
    lines[13] = lines[14] = lines[15] = lines[16] = "[1]"  # a batch of bad lines only
    write(root / "a.jsonl", *lines)
    write(root / "b.jsonl", case(0), case(200))
    problems = [[str(p) for p in raised(monkeypatch, n, input=str(root)).problems] for n in (1, 2, 3)]  # type: ignore[attr-defined]
    assert problems[1] == problems[0] and problems[2] == problems[0]
    assert len(problems[0]) == 9 and problems[0][-2:] == [
        f"{root / 'a.jsonl'}:10: id: duplicate id 'C002' (first at {root / 'a.jsonl'}:3)",
        f"{root / 'b.jsonl'}:1: id: duplicate id 'C000' (first at {root / 'a.jsonl'}:1)",
    ]
    assert isinstance(raised(monkeypatch, 2, input=str(root)), SuiteError)


def test_a_duplicate_inside_one_batch_is_found_as_across_batches(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's ids are taken at once when all are new (``CaseStream.take_ids``); a batch
    repeating an id, or one seen before, is taken id by id, as one process takes them."""
    suite = write(tmp_path / "s.jsonl", case(0), case(1), case(1), case(3), case(4), case(0), case(6), case(7))
    problems = [[str(p) for p in raised(monkeypatch, n, input=str(suite), collect_only=True).problems]  # type: ignore[attr-defined]
                for n in (1, 2)]
    assert problems[0] == problems[1] == [f"{suite}:3: id: duplicate id 'C001' (first at {suite}:2)",
                                          f"{suite}:6: id: duplicate id 'C000' (first at {suite}:1)"]


@pytest.mark.parametrize("collect_only", [False, True])
def test_a_case_with_problems_claims_its_id_as_when_one_process_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      collect_only: bool) -> None:
    """A broken line or HOCON file still claims its id: its duplicate, before or after it, in its batch or
    another, is reported as one process reports it (the readers used to drop the claim)."""
    root = tmp_path / "suites"
    root.mkdir()
    lines: list[Any] = [case(i) for i in range(12)]
    lines[1] = case(1, timeout="soon")  # broken, claims C001; line 10 repeats it (another batch)
    lines[9] = case(1)
    lines[7] = case(6, timeout="later")  # broken, its id first at line 7 (a case in the same batch)
    lines[11] = {"id": "c", "input": "the broken HOCON file's id"}
    write(root / "a.jsonl", *lines)
    (root / "c.hocon").write_text("{ interactions: [", encoding="utf-8")
    problems = [[str(p) for p in raised(monkeypatch, n, input=str(root), collect_only=collect_only).problems]  # type: ignore[attr-defined]
                for n in (1, 2, 3)]
    assert problems[1] == problems[0] and problems[2] == problems[0]
    assert [p for p in problems[0] if "duplicate" in p] == [
        f"{root / 'a.jsonl'}:8: id: duplicate id 'C006' (first at {root / 'a.jsonl'}:7)",
        f"{root / 'a.jsonl'}:10: id: duplicate id 'C001' (first at {root / 'a.jsonl'}:2)",
        f"{root / 'c.hocon'}: id: duplicate id 'c' (first at {root / 'a.jsonl'}:12)",
    ]


def test_selection_and_plan_errors_are_the_ones_one_process_gives(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write(tmp_path / "s.jsonl", *(case(i) for i in range(20)), case(20, success_ratio="5/3"),
                  case(21, success_ratio="7/2"))
    for settings in ({"run_pattern": "^D"}, {"patterns": ("nothing",)}, {}):
        errors = [str(raised(monkeypatch, n, input=str(suite), collect_only=True, **settings)) for n in (1, 2)]
        assert errors[1] == errors[0], settings
    assert ":21" in errors[0] or "5/3" in errors[0]


def test_a_bad_process_count_is_a_settings_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write(tmp_path / "s.jsonl", case(1))
    for bad in ("0", "two"):
        monkeypatch.setenv("FARM_LOAD_PROCESSES", bad)
        with pytest.raises(SettingsError, match=f"FARM_LOAD_PROCESSES={bad!r}: expected a whole number"):
            prepare_sweep(TestSettings(input=str(suite), name=AGENT, collect_only=True))


def test_the_command_lists_a_large_suite_the_same_with_processes(tmp_path: Path) -> None:
    """Over ``PARALLEL_MIN_BYTES``, as a user runs it: ``farm test --collect-only``."""
    suite = tmp_path / "big.jsonl"
    pad = "x" * 100
    with suite.open("w", encoding="utf-8") as out:
        for i in range(75_000):
            out.write(json.dumps({"id": f"C{i:05d}", "input": f"ping {i} {pad}"}) + "\n")
    assert suite.stat().st_size > load_processes.PARALLEL_MIN_BYTES
    outputs = []
    for processes in ("1", "2"):
        env = {**os.environ, "FARM_LOAD_PROCESSES": processes}
        proc = subprocess.run([sys.executable, "-m", "farm", "test", "-i", str(suite), "-n", AGENT, "--collect-only"],
                              capture_output=True, text=True, env=env, cwd=Path(__file__).parents[2], timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs.append((proc.stdout, proc.stderr.strip().splitlines()[-1]))
    assert outputs[1] == outputs[0]
    assert outputs[0][1] == "collected 75000 cases (75000 runs)"
    assert outputs[0][0].split() == [f"C{i:05d}" for i in range(75_000)]


def test_a_reading_process_that_dies_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook file is imported when its case loads; this one ends the process importing it."""
    (tmp_path / "fatal.py").write_text("import os\nos._exit(3)\n\ndef before(ctx):\n    pass\n", encoding="utf-8")
    suite = write(tmp_path / "s.jsonl", *(case(i) for i in range(9)), case(9, before="fatal.py:before"))
    monkeypatch.setenv("FARM_LOAD_PROCESSES", "2")
    with pytest.raises(FarmRuntimeError, match="a process reading the suite ended with exit code 3"):
        prepare_sweep(TestSettings(input=str(suite), name=AGENT, collect_only=True))


def test_a_distributed_submit_reads_with_at_most_two_processes_unless_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked readers add memory to the plan a submitter holds: two at most by default (a million
    cases: 365 MB the tree, against 500 MB allowed), as many as asked for."""
    stream = open_input(str(write(tmp_path / "s.jsonl", case(1))))
    monkeypatch.delenv("FARM_LOAD_PROCESSES", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert load_processes.load_processes(stream, most=load_processes.SUBMIT_READERS) == min(cores, 2)
    assert load_processes.load_processes(stream) == cores  # --collect-only: every core
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert load_processes.load_processes(stream, most=load_processes.SUBMIT_READERS) == 2
    monkeypatch.setenv("FARM_LOAD_PROCESSES", "3")
    assert load_processes.load_processes(stream, most=load_processes.SUBMIT_READERS) == 3


def every_field(tmp_path: Path) -> list[Any]:
    """Cases with every optional field among plain ones (id, string input, at most ``assert``: a
    listing's reader leaves these unbuilt, ``farm.suites.jsonl.PlainCase``)."""
    (tmp_path / "hooks.py").write_text("def before(ctx):\n    pass\n\ndef after(ctx):\n    pass\n", encoding="utf-8")
    check = {"type": "contains", "value": "pong"}
    full = [
        case(100, user="u", team="t", metadata={"m": 1}, name="N", timeout="2m", assert_=None),
        case(101, skip=True, options={"connector": "c", "search": True}, expected="pong"),
        case(102, before="hooks.py:before", after="hooks.py:after", assert_=None),
        case(103, simulator={"fixed_responses": ["a"]}, checkpoints=[{"id": "c", "assert": check}], max_turns=2),
        case(104, input=[{"role": "user", "content": "hi"}]),
        case(105, skip=False, timeout=3, expected=None),
    ]
    full = [{("assert" if k == "assert_" else k): v for k, v in c.items() if v is not None or k != "assert_"}
            for c in full]
    plain = [case(i, **({"assert": check} if i % 3 else {})) for i in range(30)]
    return [*plain[:10], *full[:4], *plain[10:20], *full[4:], *plain[20:]]


@pytest.mark.parametrize("variant", ["valid", "bad at start", "bad in the middle", "bad at the end", "duplicates",
                                     "a judge"])
def test_a_listing_of_unbuilt_cases_gives_what_one_process_building_every_case_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variant: str) -> None:
    """``--collect-only`` read alone builds every case (``iter_jsonl``); read by processes, its
    plain cases stay unbuilt (``iter_listed``, ``BatchPlanner.plan_listed``): the same ids, totals,
    notes and judges, or the same problems in the same order."""
    lines = every_field(tmp_path)
    bad = ["{oops", case(900, timeout="soon"), {"id": "", "input": "x"}, case(901, assert_="contains")]
    bad = [{("assert" if k == "assert_" else k): v for k, v in c.items()} if isinstance(c, dict) else c for c in bad]
    where = {"bad at start": 0, "bad in the middle": len(lines) // 2, "bad at the end": len(lines)}.get(variant)
    if where is not None:
        lines[where:where] = bad
    if variant == "duplicates":  # a plain case again, a full case's id on a plain one, a plain id on a full one
        lines += [case(3), case(100), case(7, skip=True)]
    if variant == "a judge":  # plain: the case named as the judge's first asker is built from its line
        lines[22:22] = [case(i, **{"assert": [{"type": "agent", "value": "is kind", "use": "agents:critic"}]})
                        for i in (106, 107)]
    suite = write(tmp_path / "s.jsonl", *lines)
    outcomes = []
    for processes in (1, 2, 3):
        try:
            got = prepared(monkeypatch, processes, input=str(suite), collect_only=True)
        except InputError as exc:
            outcomes.append([str(p) for p in getattr(exc, "problems", [exc])])
            continue
        plan = got.plan
        outcomes.append([got.listed, got.loaded.notes, plan.total_cases, plan.total_runs, plan.max_case_timeout_s,
                         plan.agent_label, plan.skipped_runs])
    assert outcomes[1] == outcomes[0] and outcomes[2] == outcomes[0]
    if variant == "valid":
        assert len(outcomes[0][0]) == 36 and "C101  (skipped: skip: true)" in outcomes[0][0]
    elif variant == "a judge":  # the judge is refused, naming its first asker's line
        assert len(outcomes[0]) == 1 and outcomes[0][0].startswith(f"{suite}:23: judge agents:critic: ")
    else:
        assert all(":" in problem for problem in outcomes[0]) and len(outcomes[0]) == (3 if variant == "duplicates"
                                                                                       else len(bad))


@pytest.mark.parametrize("bad_at", [0, 37_500, 75_000])
def test_the_command_refuses_a_large_suite_the_same_with_processes(tmp_path: Path, bad_at: int) -> None:
    """A bad line and a duplicate id in a suite over ``PARALLEL_MIN_BYTES``: exit 2 and the same
    messages read alone (every case built) or by processes (plain cases unbuilt)."""
    suite = tmp_path / "big.jsonl"
    lines = [json.dumps({"id": f"C{i:05d}", "input": f"ping {i} {'x' * 100}",
                         "assert": {"type": "contains", "value": "ping"}}) for i in range(75_000)]
    lines[bad_at:bad_at] = ['{"id": "C00009", "input": "again"}', '{"id": "bad", "input": "x", "timeout": "soon"}',
                            "[1]"]
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outputs = []
    for processes in ("1", "2"):
        env = {**os.environ, "FARM_LOAD_PROCESSES": processes}
        proc = subprocess.run([sys.executable, "-m", "farm", "test", "-i", str(suite), "-n", AGENT, "--collect-only"],
                              capture_output=True, text=True, env=env, cwd=Path(__file__).parents[2], timeout=300)
        outputs.append((proc.returncode, proc.stdout, proc.stderr))
    assert outputs[1] == outputs[0]
    assert outputs[0][0] == 2 and f"{suite}:{bad_at + 2}: timeout: not a duration: 'soon'" in outputs[0][2]
    assert "duplicate id 'C00009'" in outputs[0][2] and f"{suite}:{bad_at + 3}: " in outputs[0][2]
