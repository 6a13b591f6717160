"""``farm view`` in headless Chromium: a real ``farm view`` process over a history that real
``farm test`` runs recorded (hostile case ids and outputs included), and over a real Redis with a
distributed sweep in flight on a real worker."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser_fixtures import headless_chromium
from tests.support.farm_view import ViewServers, view_env
from tests.support.history_fixtures import take_inbox
from tests.support.servers import free_port

HOSTILE_ID = '<img src=x onerror="window.__pwned=1">'
HOSTILE_OUTPUT = "<script>window.__pwned=2</script>"
AGENT = f'''
import os, pathlib, time

def respond(messages, context):
    text = messages[-1]["content"]
    if text == "wait":  # waits for the test to open the gate
        gate = pathlib.Path(os.environ["VIEW_TEST_GATE"])
        while not gate.exists():
            time.sleep(0.05)
    return "ok" if text != "evil" else {HOSTILE_OUTPUT!r}
'''
SUITE = "\n".join(json.dumps(c) for c in [
    {"id": "steady", "input": "fine", "assert": {"type": "contains", "value": "ok"}},
    {"id": HOSTILE_ID, "input": "evil", "assert": {"type": "contains", "value": "ok"}},
]) + "\n"
FLOWER = "http://flower.example:5555"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium() as chromium:
        yield chromium


_env = view_env


def _farm(project: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "farm", *args], cwd=project, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "s.jsonl").write_text(SUITE)
    return tmp_path


@pytest.fixture()
def start_view(project: Path, view_servers: ViewServers) -> Callable[..., str]:
    def start(*args: str, env: dict[str, str] | None = None) -> str:
        return view_servers.start(project, *args, env=env or _env(project / "data"))

    return start


def _record_two_sweeps(project: Path) -> list[str]:
    env = _env(project / "data")
    ids: list[str] = []
    for tag in ("env=first", "env=second"):
        done = _farm(project, "test", "-i", "s.jsonl", "-n", "py:agent.py:respond", "--runs", "3", "--tag", tag,
                     env=env)
        assert done.returncode == 1, done.stderr  # the hostile case fails on purpose
        # Two sweeps started in one second have ids ordered by their random tails, not by time.
        new = {j.stem for j in (project / "data" / "journals").glob("*.jsonl")} - set(ids)
        assert len(new) == 1, new
        ids.append(new.pop())
    return ids


def _watch(page: Any) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def test_history_pages_render_link_and_keep_hostile_text_as_text(browser: Any, project: Path,
                                                                  start_view: Callable[..., str]) -> None:
    from playwright.sync_api import expect

    first, second = _record_two_sweeps(project)
    (project / "data" / "journals" / f"{first}.jsonl").unlink()  # its page falls back to the history's figures
    url = start_view(env=_env(project / "data", FARM_FLOWER_URL=FLOWER))
    context = browser.new_context()
    page = context.new_page()
    errors = _watch(page)

    page.goto(url + "/")
    expect(page.locator("#sweeps tbody tr")).to_have_count(2)
    assert page.locator("nav a", has_text="Flower").get_attribute("href") == FLOWER
    page.locator("a.sweep", has_text=second).click()  # journal on disk: the full HTML report
    expect(page).to_have_title("Agent test report · py:agent.py:respond")
    expect(page.locator("body")).to_contain_text(HOSTILE_OUTPUT)

    page.goto(url + "/")
    page.locator("a.sweep", has_text=first).click()  # journal gone: the figures history holds
    expect(page.locator("#cases tbody tr")).to_have_count(2)
    hostile = page.locator("a.case", has_text="onerror")
    assert hostile.text_content() == HOSTILE_ID
    assert page.locator("img").count() == 0
    hostile.click()  # the case's trend page, over both sweeps
    expect(page).to_have_title("Trends · agent-farm")
    expect(page.locator("body")).to_contain_text(HOSTILE_ID)

    page.goto(url + "/")
    page.locator(f"input[name=base][value='{first}']").check()
    page.locator(f"input[name=head][value='{second}']").check()
    page.get_by_role("button", name="Compare the two chosen").click()
    expect(page).to_have_title(f"Comparison · {second}")

    page.goto(url + "/?tag=env=first")
    expect(page.locator("#sweeps tbody tr")).to_have_count(1)
    expect(page.locator("#sweeps")).to_contain_text(first)
    page.goto(url + "/?status=failed")
    expect(page.locator("#sweeps")).to_contain_text("No recorded sweep matches")
    assert page.evaluate("window.__pwned") is None
    assert errors == []
    context.close()


def test_a_public_address_needs_basic_auth(project: Path, start_view: Callable[..., str]) -> None:
    refused = _farm(project, "view", "--address", "0.0.0.0", "--port", str(free_port()), env=_env(project / "data"))
    assert refused.returncode == 2
    assert "FARM_VIEW_USER and FARM_VIEW_PASSWORD" in refused.stderr
    url = start_view("--address", "0.0.0.0", env=_env(project / "data", FARM_VIEW_USER="ann",
                                                       FARM_VIEW_PASSWORD="s3cret"))
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(url + "/", timeout=30)
    assert denied.value.code == 401 and denied.value.headers["WWW-Authenticate"].startswith("Basic")
    wrong = urllib.request.Request(url + "/", headers={"Authorization": "Basic " + base64.b64encode(b"ann:x").decode()})
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(wrong, timeout=30)
    right = urllib.request.Request(url + "/", headers={"Authorization": "Basic " +
                                                       base64.b64encode(b"ann:s3cret").decode()})
    with urllib.request.urlopen(right, timeout=30) as reply:
        assert reply.status == 200 and b"No recorded sweep" in reply.read()


@pytest.mark.redis
@pytest.mark.slow
def test_a_distributed_sweep_in_flight_shows_its_progress(browser: Any, project: Path, redis_server: str,
                                                         redis_client: Any, farm_worker: Any,
                                                         start_view: Callable[..., str]) -> None:
    from playwright.sync_api import expect

    gate = project / "gate"
    (project / "s.jsonl").write_text(SUITE.splitlines()[0] + "\n" + json.dumps(
        {"id": "held", "input": "wait", "assert": {"type": "contains", "value": "ok"}}) + "\n")
    env = _env(project / "data", FARM_BROKER_URL=redis_server, VIEW_TEST_GATE=str(gate))
    submitted = _farm(project, "test", "-i", "s.jsonl", "-n", f"py:{project / 'agent.py'}:respond", "--runs", "5",
                      "--detach", "--no-history", env=env)
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    url = start_view(env=env)
    context = browser.new_context()
    page = context.new_page()
    errors = _watch(page)
    page.goto(url + "/live")
    row = page.locator("#live tr.in-flight", has_text=sweep_id)
    expect(row).to_contain_text("0 / 10 runs")  # no worker yet
    farm_worker(env={"VIEW_TEST_GATE": str(gate)}, concurrency=16)
    expect(row.locator(".runs")).to_have_text("5 / 10 runs", timeout=120_000)  # steady done, held waiting
    assert row.locator("progress").get_attribute("value") == "5"
    gate.write_text("open")
    expect(page.locator("#live")).to_contain_text("No sweep in flight.", timeout=120_000)
    assert errors == []
    context.close()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_no_file_is_read_but_a_recorded_sweeps_own_journal(project: Path, start_view: Callable[..., str]) -> None:
    """URL parameters name recorded sweeps only (never a path on the server), and a sweep's page
    opens the journal path the history holds only when it is that sweep's own farm journal."""
    import shutil
    import sqlite3
    from urllib.parse import quote

    first, second = _record_two_sweeps(project)
    journals = project / "data" / "journals"
    elsewhere = project / "elsewhere" / "journals"
    elsewhere.mkdir(parents=True)
    shutil.copy(journals / f"{second}.jsonl", elsewhere / f"{first}.jsonl")  # a journal's name, another sweep's plan
    (journals / f"{first}.jsonl").unlink()
    report = project / "r.json"
    _farm(project, "report", str(journals / f"{second}.jsonl"), "-o", str(report), env=_env(project / "data"))
    assert report.is_file()  # a JSON report on the server's disk (exit 1: the hostile case fails)
    take_inbox(f"sqlite:///{project / 'data' / 'history.sqlite'}")
    with sqlite3.connect(project / "data" / "history.sqlite") as db:
        db.execute("UPDATE farm_sweeps SET journal = ? WHERE sweep_id = ?", (str(elsewhere / f"{first}.jsonl"), first))
    url = start_view()

    status, page = _get(f"{url}/compare?base={quote(str(report))}&head={second}")
    assert status == 404 and "no recorded sweep" in page
    status, page = _get(f"{url}/sweeps/{first}")
    assert status == 200 and 'id="cases"' in page and "Agent test report" not in page
    status, page = _get(f"{url}/sweeps/{second}")  # its own journal, where it was recorded: the full report
    assert status == 200 and "Agent test report" in page


def test_without_auth_only_a_loopback_host_is_answered(start_view: Callable[..., str]) -> None:
    """A page on another site that rebinds its name to 127.0.0.1 sends its own Host: refused."""
    url = start_view()
    status, page = _get(url + "/")
    assert status == 200 and "No recorded sweep" in page
    for host in ("evil.example", "evil.example:8765", "10.0.0.1"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url + "/", headers={"Host": host}), timeout=60)
        assert refused.value.code == 421
    ok = urllib.request.Request(url + "/", headers={"Host": "localhost:1"})
    with urllib.request.urlopen(ok, timeout=60) as reply:
        assert reply.status == 200


def test_reports_lead_back_cases_link_their_trends_and_the_default_pair_compares_like_with_like(
        browser: Any, project: Path, start_view: Callable[..., str]) -> None:
    from playwright.sync_api import expect

    (project / "other.py").write_text(AGENT)
    env = _env(project / "data")
    ids: list[str] = []
    for agent in ("py:agent.py:respond", "py:other.py:respond", "py:agent.py:respond"):  # oldest first
        done = _farm(project, "test", "-i", "s.jsonl", "-n", agent, "--runs", "2", env=env)
        assert done.returncode == 1, done.stderr
        new = {j.stem for j in (project / "data" / "journals").glob("*.jsonl")} - set(ids)
        ids.append(new.pop())
    url = start_view()
    with urllib.request.urlopen(url + "/favicon.ico") as icon:  # our own server
        assert icon.status == 204
    page = browser.new_context().new_page()
    errors = _watch(page)
    page.goto(url + "/")
    # the head is the newest sweep; the base the newest earlier one of the same agent, not the other agent's
    assert page.locator(f"input[name=head][value='{ids[2]}']").is_checked()
    assert page.locator(f"input[name=base][value='{ids[0]}']").is_checked()
    page.get_by_role("button", name="Compare the two chosen").click()
    page.locator("#farm-view-nav a", has_text="all sweeps").click()  # back from the comparison
    expect(page.locator("#sweeps tbody tr")).to_have_count(3)
    page.locator("a.sweep", has_text=ids[2]).click()  # the full report, with the way back and to the trends
    expect(page).to_have_title("Agent test report · py:agent.py:respond")
    page.locator("#farm-view-nav a", has_text="case trends").click()
    page.locator("a.case", has_text="steady").click()
    expect(page).to_have_title("Trends · agent-farm")
    page.locator("#farm-view-nav a", has_text="all sweeps").click()
    expect(page.locator("#sweeps tbody tr")).to_have_count(3)
    assert errors == []
