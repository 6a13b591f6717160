"""Provenance (SPEC 25): what the provider served each run, against the bundled OpenAI-compatible
server given ``--serve-model`` and ``--system-fingerprint`` (before them it echoed the requested
model and sent no fingerprint): every report names them, the history keeps them, and ``farm
compare`` marks a verdict whose sides were served by different models."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tests.support.fleet_project import KEY, farm_env, write_connector, write_prompt_agent
from tests.support.servers import openai_server

ASKED = "gpt-asked"
CASES = [{"id": "echo", "input": "hello farm", "assert": {"type": "contains", "value": "hello"}}]


def farm(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "farm", *args], cwd=root, env=farm_env(root),
                          capture_output=True, text=True, timeout=180, check=False)


def sweep(root: Path, served_model: str | None, fingerprint: str | None, *extra: str) -> Path:
    """Three runs of the echo case against a server that answers ``served_model``; the suite."""
    with openai_server(serve_model=served_model, system_fingerprint=fingerprint) as server:
        write_connector(root, server.url, model=ASKED)
        suite = write_prompt_agent(root, CASES)
        done = farm(root, "test", "-i", str(suite), "--runs", "3", "--no-progress", *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    return suite


def test_every_report_names_the_served_model_and_fingerprint(tmp_path: Path) -> None:
    out = {ext: tmp_path / f"r.{ext}" for ext in ("json", "jsonl", "md", "html", "xml")}
    sweep(tmp_path, "gpt-served-0613", "fp_abc123", "--no-history", *(a for p in out.values() for a in ("-o", str(p))))
    report = json.loads(out["json"].read_text())
    (case,) = report["results"]
    counts = {"models": {"gpt-served-0613": 3}, "system_fingerprints": {"fp_abc123": 3}, "commits": {},
              "server_versions": {}}
    assert case["served"] == counts and report["summary"]["served"] == counts
    assert {d["served"]["model"] for d in case["run_details"]} == {"gpt-served-0613"}
    lines = [json.loads(line) for line in out["jsonl"].read_text().splitlines()]
    results = [e for e in lines if e["type"] == "result"]
    assert [e["served"]["model"] for e in results] == ["gpt-served-0613"] * 3  # what served, not what was asked
    assert {e["served"]["system_fingerprint"] for e in results} == {"fp_abc123"}
    assert len({e["served"]["request_id"] for e in results}) == 3  # the server's x-request-id, one per answer
    markdown = out["md"].read_text()
    assert "Served: gpt-served-0613 ×3 (fp\\_abc123 ×3)" in markdown  # the case's line
    assert "| Served | gpt-served-0613 ×3 (fp\\_abc123 ×3) |" in markdown  # the summary's row
    html = out["html"].read_text()
    assert "gpt-served-0613" in html and "servedText" in html
    junit = ET.parse(out["xml"]).getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert json.loads(props["served"] or "null")["models"] == {"gpt-served-0613": 3}


def test_without_the_flags_the_requested_model_is_served(tmp_path: Path) -> None:
    sweep(tmp_path, None, None, "--no-history", "-o", str(tmp_path / "r.json"))
    (case,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert case["served"]["models"] == {ASKED: 3} and case["served"]["system_fingerprints"] == {}


def compared(root: Path, *args: str) -> tuple[dict[str, Any], str]:
    done = farm(root, "compare", *args, "-o", str(root / "cmp.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    text = farm(root, "compare", *args).stdout
    (row,) = json.loads((root / "cmp.json").read_text())["cases"]
    return row, text


def test_compare_of_reports_marks_a_changed_served_model(tmp_path: Path) -> None:
    sweep(tmp_path, "gpt-a", "fp_1", "--no-history", "-o", str(tmp_path / "base.json"))
    sweep(tmp_path, "gpt-b", "fp_2", "--no-history", "-o", str(tmp_path / "head.json"))
    row, text = compared(tmp_path, str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--all")
    assert row["served_changed"] is True and row["served"] == ["gpt-a ×3 (fp_1 ×3)", "gpt-b ×3 (fp_2 ×3)"]
    assert "served model changed: gpt-a ×3 (fp_1 ×3) → gpt-b ×3 (fp_2 ×3)" in text
    same, _ = compared(tmp_path, str(tmp_path / "base.json"), str(tmp_path / "base.json"))
    assert same["served_changed"] is False and same["served"] is None


def test_the_history_keeps_what_served_and_compare_marks_the_change(tmp_path: Path) -> None:
    history = f"sqlite:///{tmp_path / 'history.sqlite'}"
    sweep(tmp_path, "gpt-a", None, "--history", history)
    sweep(tmp_path, "gpt-a", "fp_swapped", "--history", history)  # same name, another backend
    row, text = compared(tmp_path, "last~1", "last", "--history", history, "--all")
    assert row["served_changed"] is False  # a side without a fingerprint: only the models compare, and agree
    sweep(tmp_path, "gpt-b", "fp_swapped", "--history", history)
    row, text = compared(tmp_path, "last~1", "last", "--history", history, "--all")
    assert row["served_changed"] is True and "served model changed: gpt-a ×3 (fp_swapped ×3) → gpt-b" in text
    trend = json.loads(farm(tmp_path, "history", "--history", history, "--json").stdout)
    (case,) = trend["cases"]
    assert [p["served"]["models"] for p in case["points"]] == [{"gpt-a": 3}, {"gpt-a": 3}, {"gpt-b": 3}]
    (change,) = case["served_changes"]  # the first two sweeps: one without a fingerprint, the models agree
    assert change["sweep_id"] == trend["sweeps"][-1]["sweep_id"] and change["to"] == "gpt-b ×3 (fp_swapped ×3)"
    said = farm(tmp_path, "history", "--history", history).stdout
    assert f"echo: served model changed at {change['sweep_id']}: gpt-a ×3 (fp_swapped ×3) → gpt-b ×3" in said
    page = tmp_path / "trends.html"
    assert farm(tmp_path, "history", "--history", history, "--html", str(page)).returncode == 0
    assert "served_changes" in page.read_text() and "served-changed" in page.read_text()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_bisect_that_finds_no_bad_commit_says_the_served_model_changed(tmp_path: Path) -> None:
    """Three commits that change nothing the agent reads; the provider swaps the model after GOOD's
    three runs (deterministically: by the answers' count), so BAD is served by another model."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "suite.jsonl").write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    shas = []
    for i in range(3):
        (repo / "notes.txt").write_text(f"change {i}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", f"commit {i}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    with openai_server(system_fingerprint="fp_1") as server:
        chat = server.server
        first = chat.served

        def swapped(reply: dict[str, Any]) -> dict[str, str]:
            header: dict[str, str] = first(reply)
            reply["model"] = "gpt-a" if chat.answered <= 3 else "gpt-b"
            return header

        chat.served = swapped
        write_connector(tmp_path, server.url, model=ASKED)
        write_prompt_agent(tmp_path, CASES)
        done = subprocess.run(
            [sys.executable, "-m", "farm", "bisect", "--good", shas[0], "--bad", shas[-1], "--runs", "3",
             "-o", str(tmp_path / "b.json"), "--", "-i", "suite.jsonl", "-n", "extractor", "--parallel", "1",
             "--no-history"],
            cwd=repo, env=farm_env(tmp_path, FARM_DATA_DIR=str(tmp_path / "data")), capture_output=True, text=True,
            timeout=600, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no case regressed between GOOD and BAD" in done.stdout
    assert ("no bad commit found, and the served model changed between GOOD and BAD: gpt-a ×3 (fp_1 ×3) → "
            "gpt-b ×3 (fp_1 ×3)") in done.stdout
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["first_bad"] is None and doc["served_changed"] is True
    assert doc["served"]["good"]["models"] == {"gpt-a": 3} and doc["served"]["bad"]["models"] == {"gpt-b": 3}


def test_a_py_agent_names_the_commit_of_its_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "agent.py").write_text("def respond(messages):\n    return 'hello'\n")
    (repo / "suite.jsonl").write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "agent")
    sha = git(repo, "rev-parse", "HEAD")
    for agent in ("py:agent.py:respond", f"cmd:{sys.executable} -c \"print('hello')\""):
        done = farm(repo, "test", "-i", "suite.jsonl", "-n", agent, "--runs", "2", "--no-progress", "--no-history",
                    "-o", str(tmp_path / "r.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["results"][0]["served"]["commits"] == {sha: 2}, agent
        assert report["summary"]["served"]["models"] == {}


def test_runs_on_a_worker_report_what_served_them(tmp_path: Path, farm_worker: Any, farm_cli: Any) -> None:
    """The served model crosses the queue with each run (a real ``farm worker``)."""
    project = {"FARM_AGENTS_ROOT": str(tmp_path / "assistants"), "FARM_CONNECTORS_ROOT": str(tmp_path / "connectors"),
               "FARM_TEST_OPENAI_KEY": KEY}
    farm_worker(queue="served", concurrency=4, env=project)
    with openai_server(serve_model="gpt-on-worker", system_fingerprint="fp_w") as server:
        write_connector(tmp_path, server.url, model=ASKED)
        suite = write_prompt_agent(tmp_path, CASES)
        done = farm_cli.run("test", "-i", str(suite), "--runs", "4", "-o", str(tmp_path / "r.json"), "--broker",
                            farm_cli.broker, "--queue", "served", "--no-history", "--no-progress", env=project)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert summary["served"]["models"] == {"gpt-on-worker": 4}
    assert summary["served"]["system_fingerprints"] == {"fp_w": 4}


def test_the_commit_is_read_from_loose_packed_and_worktree_refs_and_detached_heads(tmp_path: Path) -> None:
    from farm.agents.repo_commit import repo_commit

    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "sub" / "agent.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    sha = git(repo, "rev-parse", "HEAD")
    assert repo_commit(repo / "sub") == sha  # loose ref, found from a subdirectory
    git(repo, "pack-refs", "--all")
    assert repo_commit.__wrapped__(repo / "sub") == sha  # packed-refs (uncached)
    git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / "tree"))
    assert repo_commit.__wrapped__(tmp_path / "tree" / "sub") == sha  # a linked worktree's .git file
    git(repo, "checkout", "-q", "--detach")
    assert repo_commit.__wrapped__(repo) == sha
    assert repo_commit.__wrapped__(tmp_path) is None  # outside any repository


def test_a_new_neuro_san_server_version_is_a_served_change() -> None:
    from farm.models import ServedCounts
    from farm.stats.served_change import served_changed

    old, new = ServedCounts(server_versions={"0.7.15": 3}), ServedCounts(server_versions={"0.7.16": 3})
    assert served_changed(old, new) is True and served_changed(old, old) is False
    assert served_changed(old, ServedCounts(models={"m": 3})) is None  # nothing both sides report
    assert new.text() == "neuro-san 0.7.16 ×3"


def test_the_request_id_is_the_first_header_named_whatever_its_case() -> None:
    from multidict import CIMultiDict, CIMultiDictProxy

    from farm.agents.provenance import served_of

    # a plain dict is case-sensitive: the first of the names in order wins, as sent
    assert served_of(None, {"request-id": "second", "X-Request-Id": "first"}).request_id == "first"  # type: ignore[union-attr]
    assert served_of(None, {"X-REQUEST-ID": "", "Request-Id": "next"}).request_id == "next"  # type: ignore[union-attr]
    assert served_of(None, {"x-request-id": "a", "X-Request-Id": "b"}).request_id == "a"  # type: ignore[union-attr]
    # aiohttp's headers are case-insensitive
    headers = CIMultiDictProxy(CIMultiDict({"Content-Type": "application/json", "X-Amzn-RequestId": "aws"}))
    assert served_of(None, headers).request_id == "aws"  # type: ignore[union-attr]
    # nothing reported: no Served at all
    assert served_of(None, CIMultiDictProxy(CIMultiDict({"Content-Type": "application/json"}))) is None
    assert served_of({"model": ""}, {}) is None
    assert served_of({"model": "m-1"}, None).model == "m-1"  # type: ignore[union-attr]
