"""Sweep history through the real CLI: ``farm test`` recording and gating, ``farm compare``,
``farm history`` and ``farm baseline``, on SQLite and a real PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import func, select

from farm.cli import main
from farm.history.store import HistoryStore
from farm.history.tables import comparisons, sweeps
from farm.reports import parse_json_report

AGENT = f"py:{Path(__file__).resolve().parents[1] / 'agents' / 'quality.py'}:quality"


def farm(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def write_suite(directory: Path, *case_ids: str, metadata: dict[str, dict[str, Any]] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "suite.jsonl"
    lines = [{"id": c, "input": f"question {c}", "expected": "yes", **(
        {"metadata": metadata[c]} if metadata and c in metadata else {})} for c in case_ids]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def sweep(suite: Path, url: str, quality: float, *extra: str, runs: int = 20, output: str = "r.json",
          env: dict[str, str] | None = None) -> tuple[Result, str | None]:
    """``farm test`` on ``suite`` at a pass probability; the result and the sweep id (from -o JSON)."""
    out = suite.parent / output
    result = farm("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", str(runs), "-o", str(out),
                  "--history", url, *extra, env={"FARM_TEST_QUALITY": str(quality), **(env or {})})
    sweep_id = None
    if out.suffix == ".json" and out.exists():
        sweep_id = parse_json_report(out.read_text()).envelope.sweep_id
    return result, sweep_id


def count_sweeps(url: str) -> int:
    store = HistoryStore.open(url)
    try:
        return store.count()
    finally:
        store.close()


# ------------------------------------------------------------------------------------ recording


def test_farm_test_records_the_sweep_with_its_facts(history_url: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    suite = write_suite(repo / "tests", "a", "b")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "trunk"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "suites"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    result, sweep_id = sweep(suite, history_url, 1.0, "--tag", "kind=ci", "--tag", "branch=trunk", runs=5)
    assert result.exit_code == 0, result.output
    store = HistoryStore.open(history_url)
    try:
        info = store.sweep(sweep_id or "")
        assert info is not None and info.tags == {"kind": "ci", "branch": "trunk"}
        assert (info.git_commit, info.git_branch, info.total_runs, info.status) == (commit, "trunk", 10, "complete")
        with store.engine.connect() as conn:
            row = conn.execute(select(sweeps.c.suites, sweeps.c.settings).where(sweeps.c.id == info.pk)).one()
        assert row.suites == {"suite.jsonl": hashlib.sha256(suite.read_bytes()).hexdigest()}
        assert row.settings["runs"] == 5 and row.settings["distributed"] is False
        assert "broker" not in row.settings
        report = parse_json_report((suite.parent / "r.json").read_text())
        assert not store.record(report).created  # the CLI's own report records once
        assert [c.content_hash for c in store.snapshot(info).cases] == [c.content_hash for c in report.results]
    finally:
        store.close()


def test_no_history_and_a_literal_message_record_nothing(sqlite_history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    result, _ = sweep(suite, sqlite_history_url, 1.0, "--no-history", runs=2)
    assert result.exit_code == 0, result.output
    message = farm("test", "--no-progress", "-i", "hello there", "-n", AGENT, "--history", sqlite_history_url)
    assert message.exit_code == 0, message.output
    assert count_sweeps(sqlite_history_url) == 0


def test_a_history_that_cannot_be_written_is_only_a_warning(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    result, _ = sweep(suite, "sqlite:////proc/farm-no-such-dir/history.sqlite", 1.0, runs=2)
    assert result.exit_code == 0
    assert "farm: warning: history not recorded" in result.output


def test_a_bad_history_url_exits_2_before_any_run(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    calls = tmp_path / "calls.txt"
    result, _ = sweep(suite, "mysql://root:hunter2@127.0.0.1/x", 1.0, env={"FARM_TEST_CALLS": str(calls)})
    assert result.exit_code == 2 and "unsupported database 'mysql'" in result.output
    assert "hunter2" not in result.output and not calls.exists()


def test_pass_k_figures_follow_the_flag(sqlite_history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    sweep(suite, sqlite_history_url, 0.7, runs=10)
    case = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert set(case["pass_at_k"]) == {"1", "5"} and case["pass_at_k"]["1"] == 0.7
    sweep(suite, sqlite_history_url, 0.7, "--pass-k", "3", "--pass-k", "20", runs=10)
    doc = json.loads((tmp_path / "r.json").read_text())
    case = doc["results"][0]
    assert case["pass_at_k"] == {"3": pytest.approx(1 - 1 / 120, abs=1e-4), "20": None}
    assert case["pass_hat_k"]["3"] == pytest.approx(35 / 120, abs=1e-4) and doc["metadata"]["pass_k"] == [3, 20]


# ------------------------------------------------------------------------------------ compare


def test_compare_recorded_sweeps_by_id_and_by_last(history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a", "b", metadata={"b": {"quality": 1.0}})
    _, base = sweep(suite, history_url, 1.0)
    _, head = sweep(suite, history_url, 0.3)
    assert base and head
    outputs = [str(tmp_path / name) for name in ("cmp.json", "cmp.md", "cmp.html")]
    result = farm("compare", base, head, "--history", history_url, *[a for o in outputs for a in ("-o", o)])
    assert result.exit_code == 1, result.output
    assert "regressed  a" in result.output and "1 regressed" in result.output
    doc = json.loads(Path(outputs[0]).read_text())
    assert doc["base"]["sweep_id"] == base and doc["head"]["sweep_id"] == head and doc["alpha"] == 0.1
    row = next(c for c in doc["cases"] if c["id"] == "a")
    assert row["base"] == {"runs": 20, "passed": 20} and row["head"] == {"runs": 20, "passed": 6}
    assert row["delta"] == -70.0 and row["verdict"] == "regressed" and row["q_value"] < 0.001
    assert doc["summary"]["regressed"] == 1 and doc["summary"]["unchanged"] == 1
    assert "## agent-farm comparison: 1 regressed" in Path(outputs[1]).read_text()
    assert 'id="farm-data"' in Path(outputs[2]).read_text()
    same = farm("compare", "last~1", "last", "--history", history_url, "-o", str(tmp_path / "again.json"))
    assert same.exit_code == 1
    assert json.loads((tmp_path / "again.json").read_text())["cases"] == doc["cases"]
    assert farm("compare", head, head, "--history", history_url).exit_code == 0


def test_compare_json_report_files_needs_no_database(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    sweep(suite, "sqlite:///unused.sqlite", 1.0, "--no-history", output="base.json")
    sweep(suite, "sqlite:///unused.sqlite", 0.2, "--no-history", output="head.json")
    database = tmp_path / "nowhere" / "history.sqlite"
    result = farm("compare", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--history",
                  f"sqlite:///{database}")
    assert result.exit_code == 1 and "regressed" in result.output
    assert not database.parent.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["nosuch", "last"], "BASE 'nosuch': no recorded sweep, baseline or JSON report"),
    (["missing.json", "last"], "BASE missing.json: cannot read the report"),
    (["last", "last", "-o", "cmp.pdf"], "cannot tell the format"),
    (["last", "last", "--alpha", "0.7"], "--alpha 0.7: must be between 0 and 0.5"),
])
def test_compare_bad_input_exits_2(args: list[str], message: str, sqlite_history_url: str) -> None:
    result = farm("compare", *args, "--history", sqlite_history_url)
    assert result.exit_code == 2 and message in result.output


def test_a_file_that_is_not_a_report_exits_2(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    result = farm("compare", str(bogus), str(bogus))
    assert result.exit_code == 2 and "not a farm JSON report" in result.output


# ------------------------------------------------------------------------------------ gating


def test_baseline_gating(history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a", "b")
    first, base = sweep(suite, history_url, 0.5)
    assert first.exit_code == 1  # flaky cases miss their requirement
    assert farm("baseline", "set", "main", base or "", "--history", history_url).exit_code == 0
    same, _ = sweep(suite, history_url, 0.5, "--baseline", "main", output="r.html")
    assert same.exit_code == 0, same.output  # no regression: the baseline accepts the known flakiness
    html = (tmp_path / "r.html").read_text()
    assert 'id="compared-with"' in html and "Compared with" in html
    strict, _ = sweep(suite, history_url, 0.5, "--baseline", "main", "--gate", "verdicts")
    assert strict.exit_code == 1
    worse, _ = sweep(suite, history_url, 0.0, "--baseline", "main")
    assert worse.exit_code == 1
    assert f"farm: compared with main ({base}): 2 regressed; regressed: a, b" in worse.output
    meta = json.loads((tmp_path / "r.json").read_text())["metadata"]
    assert meta["baseline"] == "main" and meta["compared_with"]["summary"]["regressed"] == 2
    store = HistoryStore.open(history_url)
    try:
        with store.engine.connect() as conn:
            kinds = conn.execute(select(comparisons.c.kind, func.count()).group_by(comparisons.c.kind)).all()
    finally:
        store.close()
    assert [(k, n) for k, n in kinds] == [("baseline:main", 3)]


def test_gating_refuses_bad_input_before_any_run(sqlite_history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    calls = tmp_path / "calls.txt"
    env = {"FARM_TEST_CALLS": str(calls)}
    unknown, _ = sweep(suite, sqlite_history_url, 1.0, "--baseline", "nosuch", env=env)
    assert unknown.exit_code == 2 and "--baseline 'nosuch'" in unknown.output
    no_base, _ = sweep(suite, sqlite_history_url, 1.0, "--gate", "verdicts", env=env)
    assert no_base.exit_code == 2 and "--gate needs --baseline" in no_base.output
    bad_tag, _ = sweep(suite, sqlite_history_url, 1.0, "--tag", "no-equals-sign", env=env)
    assert bad_tag.exit_code == 2 and "expected KEY=VALUE" in bad_tag.output
    assert not calls.exists()


def test_a_json_report_is_a_baseline_too(sqlite_history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    sweep(suite, sqlite_history_url, 1.0, "--no-history", output="base.json")
    worse, _ = sweep(suite, sqlite_history_url, 0.3, "--baseline", str(tmp_path / "base.json"))
    assert worse.exit_code == 1


def test_order_failing_first_runs_recent_trouble_first(sqlite_history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a", "b", "c", metadata={"c": {"quality": 0.0}})
    sweep(suite, sqlite_history_url, 1.0, runs=2)
    calls = tmp_path / "calls.txt"
    sweep(suite, sqlite_history_url, 1.0, "--order", "failing-first", "--parallel", "1", runs=2,
          env={"FARM_TEST_CALLS": str(calls)})
    assert [line.split()[0] for line in calls.read_text().splitlines()] == ["c", "c", "a", "a", "b", "b"]


# ------------------------------------------------------------------------------------ history, baselines


def test_history_shows_sweeps_and_case_trends(sqlite_history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a", "steady", metadata={"steady": {"quality": 1.0}})
    assert "no sweeps recorded" in farm("history", "--history", sqlite_history_url).output
    for quality, tag in ((1.0, "x"), (1.0, "y"), (0.5, "x"), (0.0, "x")):
        sweep(suite, sqlite_history_url, quality, "--tag", f"t={tag}", runs=10)
    result = farm("history", "--history", sqlite_history_url)
    assert result.exit_code == 0, result.output
    assert "a  ██▅▁  0%  became broken" in result.output
    assert "(1 case passed every run of every sweep; --all lists them)" in result.output
    assert "steady  ████  100%" in farm("history", "--all", "--history", sqlite_history_url).output
    assert "a  █▅▁  0%" in farm("history", "--tag", "t=x", "--history", sqlite_history_url).output
    doc = json.loads(farm("history", "--json", "--case", "a", "--last", "2", "--history", sqlite_history_url).output)
    assert [c["id"] for c in doc["cases"]] == ["a"] and len(doc["sweeps"]) == 2
    assert doc["cases"][0]["flag"] == "became broken"
    assert farm("history", "--case", "nope", "--history", sqlite_history_url).exit_code == 2
    html = tmp_path / "trend.html"
    assert farm("history", "--html", str(html), "--history", sqlite_history_url).exit_code == 0
    assert "Content-Security-Policy" in html.read_text()


def test_baseline_commands(sqlite_history_url: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, "a")
    _, sweep_id = sweep(suite, sqlite_history_url, 1.0, "--tag", "branch=main", runs=2)
    made = farm("baseline", "set", "release", "last:branch=main", "--history", sqlite_history_url)
    assert made.exit_code == 0 and f"baseline release: {sweep_id}" in made.output
    assert f"release  {sweep_id}" in farm("baseline", "list", "--history", sqlite_history_url).output
    assert farm("baseline", "set", "x", "nosuch", "--history", sqlite_history_url).exit_code == 2
    assert farm("baseline", "rm", "release", "--history", sqlite_history_url).exit_code == 0
    assert farm("baseline", "rm", "release", "--history", sqlite_history_url).exit_code == 2
    assert "no baselines" in farm("baseline", "list", "--history", sqlite_history_url).output
