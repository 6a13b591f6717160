"""``farm view`` pages a finished sweep from the index kept beside its journal (``farm.sweep.kept``),
and replays the journal when there is no index or it is not this journal's as it is now: real
``farm test`` sweeps, a real ``farm view``, a plain HTTP client."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from farm.sweep.kept import index_path, read_index
from farm.sweep.replay import report_from_journal
from farm.view.paged import paged_kept, paged_sweep
from farm.view.table import TableQuery
from tests.support.farm_view import ViewServers, view_env

CASES = 130
AGENT = '''
import time

def respond(messages, context):
    n = int(messages[-1]["content"].split()[-1])
    if n >= 1000:
        time.sleep(600)  # the killed sweep's last case: never answers
    return "ok" if n % 4 else f"wrong {n}"
'''


def _env(data: Path, **extra: str) -> dict[str, str]:
    return view_env(data, **({"FARM_SEMANTIC": "0"} | extra))


def _suite(path: Path, numbers: range) -> Path:
    path.write_text("".join(json.dumps({"id": f"k-{n:04d}", "input": f"question {n}",
                                        "assert": {"type": "contains", "value": "ok"}}) + "\n" for n in numbers))
    return path


def _farm_test(project: Path, data: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "farm", "test", "-n", "py:agent.py:respond", "--no-progress",
                             *args], cwd=project, env=_env(data, **env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.fixture()
def finished(tmp_path: Path) -> tuple[Path, Path]:
    """A project and the journal of the finished sweep it recorded (its index beside it)."""
    (tmp_path / "agent.py").write_text(AGENT)
    done = _farm_test(tmp_path, tmp_path / "data", "-i", str(_suite(tmp_path / "s.jsonl", range(CASES))),
                      "--runs", "3")
    assert done.wait(timeout=600) == 1, done.stderr.read() if done.stderr else ""
    (journal,) = (tmp_path / "data" / "journals").glob("*.jsonl")
    assert index_path(journal).is_file()
    return tmp_path, journal


@pytest.fixture()
def view(view_servers: ViewServers) -> Callable[[Path], str]:
    def start(project: Path) -> str:
        return view_servers.start(project, env=_env(project / "data"))

    return start


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=300) as reply:
        return str(reply.read().decode())


def _embedded(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="farm-data">(.*?)</script>', page, re.S)
    assert found is not None, page[:300]
    return dict(json.loads(found.group(1)))


def _break_the_plan(journal: Path) -> None:
    """The plan line made unreadable, the journal's size kept: a replay finds no plan any more."""
    text = journal.read_bytes()
    at = text.index(b'"type": "plan"')
    journal.write_bytes(text[:at] + b'"type": "nalp"' + text[at + len(b'"type": "plan"'):])


def test_the_kept_index_pages_the_sweep_as_its_replay_does(finished: tuple[Path, Path]) -> None:
    journal = finished[1]
    sweep_id = journal.stem
    kept = read_index(journal, sweep_id)
    assert kept is not None and len(kept.briefs) == CASES and not kept.report.results
    from_index = paged_kept(kept, sweep_id)
    replayed = paged_sweep(report_from_journal(journal), sweep_id)
    assert from_index.html == replayed.html
    assert (from_index.json_head, from_index.json_tail) == (replayed.json_head, replayed.json_tail)
    for query in (TableQuery(page=2), TableQuery(q="wrong 9"), TableQuery(filter="failed", sort="id", order="desc"),
                  TableQuery(sort="avg_duration_ms", size=50, page=3)):
        assert from_index.table.page_json(query) == replayed.table.page_json(query), query
    assert from_index.table.texts() == replayed.table.texts()
    assert read_index(journal, "another-sweep") is None
    elsewhere = index_path(journal).rename(journal.parent.parent / "elsewhere")
    index_path(journal).symlink_to(elsewhere)  # the index must be a file of its own, as the journal
    assert read_index(journal, sweep_id) is None


def test_a_fresh_view_serves_a_finished_sweep_from_its_index_without_a_replay(
        finished: tuple[Path, Path], view: Callable[[Path], str]) -> None:
    project, journal = finished
    _break_the_plan(journal)  # a replay would find no plan, and the page would be the history's figures
    page = _page(f"{view(project)}/sweeps/{journal.stem}")
    assert "Agent test report" in page
    embedded = _embedded(page)
    assert len(embedded["results"]) == 100 and embedded["summary"]["total_cases"] == CASES
    assert embedded["results"][4]["id"] == "k-0004" and embedded["results"][4]["run_details"]  # its runs, read back


@pytest.mark.parametrize("how", ["missing", "stale"])
def test_without_a_usable_index_the_view_replays_the_journal(finished: tuple[Path, Path], view: Callable[[Path], str],
                                                             how: str) -> None:
    project, journal = finished
    index = index_path(journal)
    if how == "missing":
        index.unlink()
    else:  # the journal no longer the size the index recorded; the index, were it read, would say so
        index.write_text(index.read_text().replace('"agent_id":"', '"agent_id":"STALE-INDEX-', 1))
        with journal.open("a") as more:
            more.write("\n")  # a blank line: nothing to a replay
    page = _page(f"{view(project)}/sweeps/{journal.stem}")
    embedded = _embedded(page)
    assert embedded["summary"]["total_cases"] == CASES and len(embedded["results"]) == 100
    assert "STALE-INDEX-" not in page and embedded["metadata"]["agent_id"] == "py:agent.py:respond"


def test_a_stopped_sweep_views_from_its_index(tmp_path: Path, view: Callable[[Path], str]) -> None:
    """SIGTERM: the sweep stops, ends its journal with what ran and keeps its index."""
    (tmp_path / "agent.py").write_text(AGENT)
    sweep = _farm_test(tmp_path, tmp_path / "data", "-i", str(_suite(tmp_path / "s.jsonl", range(995, 1001))),
                       "--parallel", "1", FARM_STOP_GRACE="1")
    journals = tmp_path / "data" / "journals"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the five answering cases journaled; the sixth never answers
        found = list(journals.glob("*.jsonl")) if journals.is_dir() else []
        if found and found[0].read_text().count('"type": "result"') == 5:
            break
        assert sweep.poll() is None, sweep.stderr.read() if sweep.stderr else ""
        time.sleep(0.1)
    sweep.send_signal(signal.SIGTERM)
    assert sweep.wait(timeout=120) == 143
    (journal,) = found
    summary = json.loads(journal.read_text().splitlines()[-1])
    assert summary["type"] == "summary" and index_path(journal).is_file()
    _break_the_plan(journal)  # the page can only come from the index
    embedded = _embedded(_page(f"{view(tmp_path)}/sweeps/{journal.stem}"))
    assert embedded["metadata"]["status"] == summary["metadata"]["status"] == "stopped"
    assert [c["id"] for c in embedded["results"]] == [f"k-{n:04d}" for n in range(995, 1000)]  # the sixth: cut off


def test_a_journal_cut_before_its_end_views_as_abandoned(finished: tuple[Path, Path],
                                                         view: Callable[[Path], str]) -> None:
    """What a killed sweep leaves: no summary line; the index (were one there) is not this journal's."""
    project, journal = finished
    text = journal.read_bytes()
    journal.write_bytes(text[:text.rindex(b'{"type": "summary"')])
    embedded = _embedded(_page(f"{view(project)}/sweeps/{journal.stem}"))
    assert embedded["metadata"]["status"] == "abandoned" and embedded["summary"]["total_cases"] == CASES
