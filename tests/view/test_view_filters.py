"""``farm view``'s sweeps list filters in the database: an old sweep is found behind any number of
newer ones (the list once read the newest 500 and filtered those), on SQLite and PostgreSQL; and
every answer of the view carries a Content-Security-Policy header (its own pages also in a meta tag)."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from farm.history.store import HistoryStore
from farm.view.data import LIST_LIMIT, SweepFilter, ViewData
from tests.support.browser_fixtures import make_report
from tests.support.servers import ROOT, free_port, stop_process, wait_for_port

OLD, NEW = 300, 700  # the old sweeps are all behind the newest LIST_LIMIT ones


def _record(url: str) -> None:
    store = HistoryStore.open(url)
    try:
        for n in range(OLD):  # January, agent "alpha-bot"
            store.record(make_report(f"old-{n:04d}", f"2026-01-{10 + n % 3:02d}T08:{n // 60:02d}:{n % 60:02d}Z",
                                     {"c": (1, 1)}, agent_id="Alpha-Bot"))
        for n in range(NEW):  # March, agent "beta"
            store.record(make_report(f"new-{n:04d}", f"2026-03-01T{n // 60:02d}:{n % 60:02d}:00Z",
                                     {"c": (1, 1)}, agent_id="beta"))
    finally:
        store.close()


def test_the_list_filters_by_date_and_agent_past_the_newest_sweeps(history_url: str) -> None:
    assert NEW > LIST_LIMIT  # else the test could not fail on a list filtered after the read
    _record(history_url)
    view = ViewData(history_url)

    january = view.sweeps(SweepFilter(since="2026-01-10", until="2026-01-31"))
    assert len(january) == OLD and {s.sweep_id[:4] for s in january} == {"old-"}
    one_day = view.sweeps(SweepFilter(since="2026-01-11", until="2026-01-11"))  # both ends included (UTC days)
    assert len(one_day) == OLD // 3 and {s.started_at.day for s in one_day} == {11}

    alpha = view.sweeps(SweepFilter(agent="alpha"))  # part of the id, any case
    assert len(alpha) == OLD and {s.agent for s in alpha} == {"Alpha-Bot"}
    assert view.sweeps(SweepFilter(agent="ALPHA", status="stopped")) == []
    assert len(view.sweeps(SweepFilter(agent="alpha", status="complete", until="2026-01-10"))) == OLD // 3
    assert len(view.sweeps(SweepFilter(since="2026-03-01", until="9999-12-31"))) == LIST_LIMIT  # the last day
    # No filter: the newest LIST_LIMIT, newest first.
    everything = view.sweeps(SweepFilter())
    assert len(everything) == LIST_LIMIT and everything[0].sweep_id == f"new-{NEW - 1:04d}"


def test_a_literal_percent_or_underscore_in_the_agent_filter_is_text(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    store = HistoryStore.open(url)
    try:
        store.record(make_report("s1", "2026-01-01T00:00:00Z", {"c": (1, 1)}, agent_id="a_b"))
        store.record(make_report("s2", "2026-01-02T00:00:00Z", {"c": (1, 1)}, agent_id="axb"))
    finally:
        store.close()
    assert [s.sweep_id for s in ViewData(url).sweeps(SweepFilter(agent="a_b"))] == ["s1"]
    assert ViewData(url).sweeps(SweepFilter(agent="%")) == []


def _get(url: str) -> tuple[dict[str, str], str]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return dict(answer.headers), answer.read().decode()


def test_every_answer_carries_a_content_security_policy(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    store = HistoryStore.open(url)
    try:
        store.record(make_report("s1", "2026-01-01T00:00:00Z", {"c": (1, 1)}))
    finally:
        store.close()
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "farm", "view", "--port", str(port), "--history", url],
                               cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, timeout=120, process=process)
        base = f"http://127.0.0.1:{port}"
        for path in ("/", "/sweeps/s1", "/live", "/compare?base=s1&head=s1", "/case?id=c", "/api/live"):
            headers, body = _get(base + path)
            policy = headers.get("Content-Security-Policy", "")
            assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy, (path, headers)
            assert headers.get("X-Frame-Options") == "DENY" and headers.get("X-Content-Type-Options") == "nosniff"
            if path in ("/", "/live"):  # the view's own pages: the policy also in the page itself
                meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', body)
                assert meta is not None, body[:400]
                assert html.unescape(meta.group(1)) + "; frame-ancestors 'none'" == policy
                assert "form-action 'self'" in policy and "script-src" not in policy
    finally:
        stop_process(process)
