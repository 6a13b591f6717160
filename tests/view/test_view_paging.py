"""``farm view`` pages a sweep's results on the server: a real ``farm view`` over a sweep a real
``farm test`` recorded (260 cases, a hostile id and output among them), read with a real HTTP
client and in headless Chromium."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.browser_fixtures import headless_chromium
from tests.support.farm_view import ViewServers, view_env

CASES = 260
HOSTILE_ID = '<img src=x onerror="window.__pwned=1">'
HOSTILE_OUTPUT = "<script>window.__pwned=2</script>"
AGENT = f'''
def respond(messages, context):
    text = messages[-1]["content"]
    if text == "evil":
        return {HOSTILE_OUTPUT!r}
    n = int(text.split()[-1])
    return "ok" if n % 5 else f"wrong {{n}}"  # every fifth case fails
'''


def _suite() -> str:
    lines = [{"id": f"case-{n:04d}", "input": f"question {n}", "assert": {"type": "contains", "value": "ok"}}
             for n in range(1, CASES)]
    lines.insert(7, {"id": HOSTILE_ID, "input": "evil", "assert": {"type": "contains", "value": "ok"}})
    return "".join(json.dumps(line) + "\n" for line in lines)


_env = view_env


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The project and the id of the sweep it recorded (its journal on disk)."""
    project = tmp_path_factory.mktemp("paging")
    (project / "agent.py").write_text(AGENT)
    (project / "s.jsonl").write_text(_suite())
    done = subprocess.run([sys.executable, "-m", "farm", "test", "-i", "s.jsonl", "-n", "py:agent.py:respond",
                           "--runs", "2", "--no-progress"], cwd=project, env=_env(project / "data"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr  # the failing cases fail
    (journal,) = (project / "data" / "journals").glob("*.jsonl")
    return project, journal.stem


@pytest.fixture()
def start_view(recorded: tuple[Path, str], view_servers: ViewServers) -> Callable[..., str]:
    def start(*args: str, **env: str) -> str:
        return view_servers.start(recorded[0], *args, env=_env(recorded[0] / "data", **env))

    return start


def _get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=120) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _cases(url: str, **query: str) -> dict[str, Any]:
    status, headers, body = _get(url + "?" + "&".join(f"{k}={quote(v)}" for k, v in query.items()))
    assert status == 200 and headers["Content-Type"].startswith("application/json"), (status, body[:300])
    return dict(json.loads(body))


def _script(page: str, name: str) -> Any:
    found = re.search(f'<script type="application/json" id="{name}">(.*?)</script>', page, re.S)
    assert found is not None, name
    return json.loads(found.group(1))


def test_the_page_embeds_one_page_and_the_endpoint_serves_the_others(recorded: tuple[Path, str],
                                                                     start_view: Callable[..., str]) -> None:
    sweep_id = recorded[1]
    url = start_view()
    status, headers, body = _get(f"{url}/sweeps/{sweep_id}")
    page = body.decode()
    assert status == 200 and "Agent test report" in page
    policy = headers["Content-Security-Policy"]
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert meta is not None and meta.group(1) + "; frame-ancestors 'none'" == policy
    embedded, paging = _script(page, "farm-data"), _script(page, "farm-paging")
    assert [c["id"] for c in embedded["results"]][:8] == [f"case-{n:04d}" for n in range(1, 8)] + [HOSTILE_ID]
    assert len(embedded["results"]) == 100 and embedded["summary"]["total_cases"] == CASES
    assert HOSTILE_ID not in page and HOSTILE_OUTPUT not in page  # only escaped, as in every report
    assert paging["total"] == CASES and paging["counts"]["failed"] == 51 + 1  # every fifth, and the hostile one

    api = url + paging["cases"]
    last = _cases(api, page="3", size="100")
    assert (last["page"], last["pages"], last["matching"], len(last["cases"])) == (3, 3, CASES, 60)
    assert last["cases"][-1]["id"] == "case-0259" and last["cases"][0]["run_details"]  # with its runs
    past = _cases(api, page="9", size="250")  # past the end: the last page
    assert (past["page"], len(past["cases"])) == (2, 10)
    failed = _cases(api, filter="failed", size="50", sort="id", order="desc")
    assert failed["matching"] == 52 and [c["id"] for c in failed["cases"][:2]] == ["case-0255", "case-0250"]
    rest = _cases(api, filter="failed", size="50", sort="id", order="desc", page="2")["cases"]
    assert [c["id"] for c in rest] == ["case-0005", HOSTILE_ID]  # "<" before the letters, as the page's collator
    found = _cases(api, q="WRONG 125")  # a run's output, any case
    assert [c["id"] for c in found["cases"]] == ["case-0125"] and found["total"] == CASES
    assert [c["id"] for c in _cases(api, q="window.__pwned=2")["cases"]] == [HOSTILE_ID]
    slow = _cases(api, sort="avg_duration_ms", order="desc", size="500")["cases"]
    assert [c["avg_duration_ms"] for c in slow] == sorted((c["avg_duration_ms"] for c in slow), reverse=True)

    for bad in ("size=7", "page=0", "page=x", "filter=evil", "sort=input", "order=up"):
        status, headers, body = _get(f"{api}?{bad}")
        assert status == 400 and "error" in json.loads(body), bad
    status, _, body = _get(f"{url}/api/sweeps/no-such-sweep/cases")
    assert status == 404 and "no-such-sweep" in json.loads(body)["error"]

    # the export: the JSON the standalone page's button downloads, every case in it
    status, headers, body = _get(url + paging["report"])
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    exported = json.loads(body)
    assert len(exported["results"]) == CASES and exported["summary"] == embedded["summary"]
    assert exported["results"][:100] == embedded["results"]
    for path in (paging["cases"], paging["report"], f"/sweeps/{sweep_id}"):
        _, headers, _ = _get(url + path)
        assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff", path


def test_the_endpoints_keep_the_views_host_check_and_basic_auth(recorded: tuple[Path, str],
                                                                start_view: Callable[..., str]) -> None:
    sweep_id = recorded[1]
    local = start_view()
    for path in (f"/api/sweeps/{sweep_id}/cases", f"/api/sweeps/{sweep_id}/report.json"):
        status, _, body = _get(local + path, Host="evil.example")
        assert status == 421 and b"case-0001" not in body, path
    public = start_view("--address", "0.0.0.0", FARM_VIEW_USER="ann", FARM_VIEW_PASSWORD="s3cret")
    good = "Basic " + base64.b64encode(b"ann:s3cret").decode()
    for path in (f"/api/sweeps/{sweep_id}/cases", f"/api/sweeps/{sweep_id}/report.json"):
        status, headers, body = _get(public + path)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic") and b"case-0001" not in body
        status, _, body = _get(public + path, Authorization="Basic " + base64.b64encode(b"ann:x").decode())
        assert status == 401, path
        status, _, body = _get(public + path, Authorization=good)
        assert status == 200 and b"case-0001" in body, path


@pytest.mark.browser
def test_paging_search_filter_and_sort_in_the_page(recorded: tuple[Path, str],
                                                   start_view: Callable[..., str]) -> None:
    from playwright.sync_api import expect

    url = start_view()
    with headless_chromium() as browser:
        context = browser.new_context()
        page = context.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("console", lambda m: m.type in ("error", "warning") and problems.append(m.text))
        page.goto(f"{url}/sweeps/{recorded[1]}")
        page.wait_for_selector("html[data-ready]")
        count = page.locator("#row-count")
        expect(count).to_have_text(f"Showing 1–100 of {CASES} cases")
        expect(page.locator("#page-info")).to_have_text("Page 1 of 3")
        assert page.locator(".case-id", has_text="onerror").first.text_content() == HOSTILE_ID
        page.click("#next")
        expect(count).to_have_text(f"Showing 101–200 of {CASES} cases")
        expect(page.locator("tr.case-row").first.locator(".case-id")).to_have_text("case-0100")
        page.locator("tr.case-row").first.click()  # a case of a fetched page opens with its runs
        expect(page.locator("tr.detail-row .run-row")).to_have_count(2)
        page.fill("#filter", "wrong 125")
        expect(count).to_have_text(f"Showing 1–1 of 1 matching ({CASES} total)")
        expect(page.locator("tr.case-row .case-id")).to_have_text(["case-0125"])
        page.fill("#filter", "")
        page.locator("#chips button[data-filter=failed]").click()
        expect(count).to_have_text(f"Showing 1–52 of 52 matching ({CASES} total)")
        assert page.locator("#chips button[data-filter=failed] .n").text_content() == "52"
        page.click("#results th[data-key='id'] button")
        page.click("#results th[data-key='id'] button")  # descending
        expect(page.locator("#results th[aria-sort='descending']")).to_have_count(1)
        expect(page.locator("tr.case-row .case-id").first).to_have_text("case-0255")
        page.locator(".case-id", has_text="onerror").click()
        expect(page.locator("tr.detail-row")).to_contain_text(HOSTILE_OUTPUT)  # as text
        assert page.evaluate("window.__pwned") is None and page.locator("img").count() == 0
        with page.expect_download() as download:
            page.click("#export")
        exported = json.loads(Path(download.value.path()).read_text())
        assert len(exported["results"]) == CASES
        assert problems == []
        context.close()
