"""Reports streamed case by case, run details read back from the run journal (issue 16).

An in-process sweep with a journal drops each finished case's run details and its reports read
them back from the journal one case at a time. These tests run real sweeps (a real agent, the
real executor and journal) and check that every format is byte for byte what the sweep's own
in-memory details render to: the details the sweep's accumulators kept (captured from
``on_case`` before they are dropped) against the ones the journal gives back, with more runs
than are kept (failing runs push out passing ones) and repeated errors (one traceback each).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from farm.api import TestSettings, prepare_sweep
from farm.cli import main
from farm.models import CaseStats, SweepReport
from farm.reports import render_report
from farm.reports.details import details_source
from farm.reports.json_report import report_document
from farm.reports.outputs import write_report
from farm.sweep.journal import RunJournal, journal_dir, open_journal
from farm.sweep.local import LocalExecutor
from farm.sweep.observers import Observers

AGENT = '''
import random

def respond(messages, context):
    """Mostly right; some runs wrong, some raise (two kinds of error), at random."""
    roll = random.Random(f"{context.case_id}/{context.run}").random()
    if roll < 0.1:
        raise ValueError("bad value")
    if roll < 0.15:
        raise KeyError(context.case_id)
    return "yes" if roll < 0.8 else f"no <&> {context.run}"
'''

FORMATS = {"json": "r.json", "html": "r.html", "markdown": "r.md", "junit": "r.xml"}


class CaseRecorder:
    """Keeps each case's statistics as the sweep finished it: run details in."""

    def __init__(self) -> None:
        self.cases: dict[str, CaseStats] = {}

    def on_start(self, start: Any) -> None: ...
    def on_result(self, result: Any) -> None: ...
    def on_finish(self, report: SweepReport) -> None: ...

    def on_case(self, stats: CaseStats) -> None:
        self.cases[stats.id] = stats


def _suite(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    suites = tmp_path / "suites"  # two suites: JUnit groups cases by suite
    suites.mkdir()
    first = [{"id": f"c{i}", "input": f"q{i} <b>&", "expected": "yes"} for i in range(4)]
    second = [{"id": "d0", "input": "é ✓", "expected": "yes"}, {"id": "skip-me", "input": "z", "skip": True}]
    for name, cases in (("a.jsonl", first), ("b.jsonl", second)):
        (suites / name).write_text("".join(json.dumps(c) + "\n" for c in cases))
    return suites, agent


def _sweep(tmp_path: Path, data_dir: Path, runs: int, parallel: int) -> tuple[SweepReport, SweepReport]:
    """The report as the executor returns it, and the same report with the details it kept."""
    suite, agent = _suite(tmp_path)
    outputs = tuple(str(tmp_path / name) for name in FORMATS.values())
    prepared = prepare_sweep(TestSettings(input=str(suite), name=f"py:{agent}:respond", runs=runs,
                                          parallel=parallel, outputs=outputs, cwd=str(tmp_path)))
    assert prepared.plan.max_run_details == 100
    recorder = CaseRecorder()
    with open_journal(data_dir, prepared.plan.sweep_id) as stream:
        journal = RunJournal(stream, prepared.plan)
        report = LocalExecutor().run(prepared.plan, Observers(journal, recorder))
    # load_bias is split at the sweep's median once every case is in (after the cases were observed)
    kept = report.model_copy(update={"results": [recorder.cases[s.id].model_copy(update={"load_bias": s.load_bias})
                                                 for s in report.results]})
    return report, kept


@pytest.mark.parametrize(("runs", "parallel"), [(130, 7), (1, 1)])
def test_reports_from_the_journal_equal_the_in_memory_ones(tmp_path: Path, farm_data_dir: Path, runs: int,
                                                           parallel: int) -> None:
    report, kept = _sweep(tmp_path, farm_data_dir, runs, parallel)
    # the details really left memory, and really come back
    assert details_source(report) is not None
    assert all(s.run_details == [] for s in report.results)
    assert all(s.run_details for s in kept.results)
    if runs > 100:
        assert all(s.run_details_truncated == runs - 100 for s in kept.results)
        failing = [d for s in kept.results for d in s.run_details if d.status != "passed"]
        assert failing and any(d.run > 100 for d in failing)  # a late failure pushed a passing run out
        assert any(d.traceback is None for d in failing if d.error_type)  # one traceback per error
    for fmt, name in FORMATS.items():
        path = write_report(report, Path(tmp_path / name), fmt)
        assert path.read_text(encoding="utf-8") == render_report(kept, fmt), fmt
    # and the JSON is the one the report document always made, in one piece
    whole = json.dumps(report_document(kept), indent=2, ensure_ascii=False) + "\n"
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == whole
    assert render_report(report, "json") == whole  # the attached source serves render_report too
    copied = report.model_copy(update={"metadata": {**report.metadata, "note": "copied"}})
    assert json.loads(render_report(copied, "json"))["results"] == json.loads(whole)["results"]


def test_a_case_with_details_of_its_own_keeps_them(tmp_path: Path, farm_data_dir: Path) -> None:
    report, kept = _sweep(tmp_path, farm_data_dir, 3, 2)
    assert details_source(kept) is details_source(report) is not None  # the same sweep: found by its id
    first = kept.results[0].model_copy(update={"run_details": kept.results[0].run_details[:1]})
    own = kept.model_copy(update={"results": [first, *report.results[1:]]})
    text = render_report(own, "json")
    results = json.loads(text)["results"]
    assert [len(r["run_details"]) for r in results] == [1] + [3] * (len(results) - 1)
    assert text == json.dumps(report_document(own.model_copy(update={"results": [first, *kept.results[1:]]})),
                              indent=2, ensure_ascii=False) + "\n"


def test_farm_test_writes_every_format_from_the_journal(tmp_path: Path, farm_data_dir: Path) -> None:
    """Through the CLI: the reports ``-o`` writes equal ``farm report`` rendering the journal."""
    suite, agent = _suite(tmp_path)
    args = ["test", "--no-progress", "-i", str(suite), "-n", f"py:{agent}:respond", "--runs", "120"]
    result = CliRunner().invoke(main, [*args, *(a for n in FORMATS.values() for a in ("-o", str(tmp_path / n)))],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    [journal] = sorted(journal_dir(farm_data_dir).glob("*.jsonl"))
    again = tmp_path / "again.json"
    assert CliRunner().invoke(main, ["report", str(journal), "-o", str(again)]).exit_code == 1
    live, rebuilt = json.loads((tmp_path / "r.json").read_text()), json.loads(again.read_text())
    assert live["results"] == rebuilt["results"]
    assert sum(len(r["run_details"]) for r in live["results"]) == 5 * 100


def test_a_reporter_agent_gets_every_run_detail(tmp_path: Path, farm_data_dir: Path) -> None:
    """``-r AGENT`` sends the whole report in one message: the details are read back into it."""
    suite, agent = _suite(tmp_path)
    reporter = tmp_path / "rep.py"
    reporter.write_text(
        "import json\n"
        "def render(messages, context):\n"
        "    data = json.loads(messages[-1]['content'])\n"
        "    return ' '.join(str(len(r['run_details'])) for r in data['report']['results'])\n"
    )
    out = tmp_path / "r.md"
    result = CliRunner().invoke(main, ["test", "--no-progress", "-i", str(suite), "-n", f"py:{agent}:respond",
                                       "--runs", "3", "-r", f"py:{reporter}:render", "-o", str(out)],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    assert out.read_text() == "3 3 3 3 3"
