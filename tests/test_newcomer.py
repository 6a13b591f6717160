"""Issue 27 through the real ``farm`` command: a newcomer's mistakes end in one clear line.

A mistyped suite name is not a message; a closed stdout changes neither the exit code nor the
``-o`` files; bad input (bytes, numbers, URLs, databases) is exit 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.servers import ROOT

AGENTS = ROOT / "tests" / "agents" / "basic.py"


def farm(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
         stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m farm ARGS`` with this checkout on the path (no broker unless given)."""
    full_env = {k: v for k, v in os.environ.items() if k == "FARM_DATA_DIR" or not k.startswith("FARM_")}
    full_env.update({"PYTHONPATH": str(ROOT), **(env or {})})
    return subprocess.run([sys.executable, "-m", "farm", *args], cwd=cwd or ROOT, env=full_env, text=True,
                          stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300, check=False)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


# --------------------------------------------------------------------------- -i single token


@pytest.mark.parametrize("project", [False, True])
def test_a_single_token_naming_no_file_is_a_mistyped_path(tmp_path: Path, project: bool) -> None:
    if project:
        (tmp_path / "package.yao").write_text('{"name": "p"}')
    calls = tmp_path / "calls.txt"
    result = farm("test", "--no-progress", "-i", "smoke_tests", "-n", f"py:{AGENTS}:echo", cwd=tmp_path,
                  env={"FARM_TEST_CALLS": str(calls)})
    assert_one_line_error(result, "no such file or directory: smoke_tests (to send it as a message, use -m)")
    assert not calls.exists()


def test_text_with_whitespace_stays_a_message_and_yao_compat_keeps_single_tokens(tmp_path: Path) -> None:
    spaced = farm("test", "--no-progress", "-i", "hello there", "-n", f"py:{AGENTS}:text", cwd=tmp_path)
    assert spaced.returncode == 0 and spaced.stdout.strip() == "you said: hello there", spaced.stderr
    compat = farm("test", "--no-progress", "--yao-compat", "-i", "hello", "-n", f"py:{AGENTS}:text", cwd=tmp_path)
    assert compat.returncode == 0 and compat.stdout.strip() == "you said: hello", compat.stderr


# --------------------------------------------------------------------------- a closed stdout

QUALITY = f"py:{ROOT / 'tests' / 'agents' / 'quality.py'}:quality"


def closed_pipe_run(*args: str, cwd: Path) -> int:
    """Run farm with stdout and stderr on a pipe nobody reads (as ``| head`` after it quit): its exit code."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # no reader at all: every write gets EPIPE, deterministically
    try:
        env = {k: v for k, v in os.environ.items() if k == "FARM_DATA_DIR" or not k.startswith("FARM_")}
        process = subprocess.Popen([sys.executable, "-m", "farm", *args], cwd=cwd,
                                   env={**env, "PYTHONPATH": str(ROOT)}, stdout=write_end, stderr=write_end)
    finally:
        os.close(write_end)
    return process.wait(timeout=300)


@pytest.fixture
def regressed_reports(tmp_path: Path) -> tuple[Path, Path]:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": c, "input": f"q {c}", "expected": "yes"}) + "\n" for c in "ab"))
    for name, quality in (("base.json", "1.0"), ("head.json", "0.1")):
        made = farm("test", "--no-progress", "--no-history", "-i", str(suite), "-n", QUALITY, "--runs", "20",
                    "-o", str(tmp_path / name), env={"FARM_TEST_QUALITY": quality})
        assert made.returncode in (0, 1), made.stderr
    return tmp_path / "base.json", tmp_path / "head.json"


def test_a_closed_stdout_keeps_compare_exit_code_and_every_o_file(tmp_path: Path,
                                                                  regressed_reports: tuple[Path, Path]) -> None:
    base, head = regressed_reports
    code = closed_pipe_run("compare", str(base), str(head), "-o", "c.html", "-o", "c.md", cwd=tmp_path)
    assert code == 1
    assert (tmp_path / "c.html").exists() and (tmp_path / "c.md").exists()


def test_a_closed_stdout_keeps_the_exit_code_of_farm_test(tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "q", "expected": "yes", "metadata": {"quality": 0.1}}) + "\n")
    code = closed_pipe_run("test", "--no-progress", "--no-history", "-i", str(suite), "-n", QUALITY, "--runs", "3",
                           "-o", "r.md", "-o", "r.json", cwd=tmp_path)
    assert code == 1  # the case fails: a closed pipe must not turn that into 0
    assert (tmp_path / "r.md").exists() and (tmp_path / "r.json").exists()


# --------------------------------------------------------------------------- tracebacks → one line

@pytest.mark.parametrize("command", [["compare", "{bad}", "{bad}"], ["assess", "{bad}"]])
def test_a_non_utf8_file_is_one_clear_line(tmp_path: Path, command: list[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe{not text")
    result = farm(*[part.format(bad=bad) for part in command], cwd=tmp_path)
    assert_one_line_error(result, "not UTF-8 text", "bad.json")


def test_huge_numbers_in_history_references_are_one_clear_line(tmp_path: Path) -> None:
    history = f"sqlite:///{tmp_path / 'h.sqlite'}"
    skip = farm("compare", "last~99999999999999999999", "last", "--history", history, cwd=tmp_path)
    assert_one_line_error(skip, "last~99999999999999999999", "no recorded sweep")
    last = farm("history", "--last", "99999999999999999999", "--history", history, cwd=tmp_path)
    assert_one_line_error(last, "--last 99999999999999999999")


BAD_BROKERS = ["redis://127.0.0.1:99999/0", "redis://[::1/0"]


@pytest.mark.parametrize("broker", BAD_BROKERS)
@pytest.mark.parametrize("command", [["status"], ["results", "abc"], ["cancel", "abc"], ["worker"],
                                     ["test", "-m", "hi", "-n", f"py:{AGENTS}:text"]])
def test_a_broker_url_with_a_bad_port_or_host_is_one_clear_line(tmp_path: Path, broker: str,
                                                                 command: list[str]) -> None:
    result = farm(*command, "--broker", broker, cwd=tmp_path)
    assert_one_line_error(result, f"broker {broker}")


# --------------------------------------------------------------------------- the history database


def test_a_database_of_another_program_is_refused_with_what_it_holds(tmp_path: Path) -> None:
    import sqlite3

    database = tmp_path / "app.sqlite"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    result = farm("history", "--history", f"sqlite:///{database}", cwd=tmp_path)
    assert_one_line_error(result, "not a farm history database", "customers")
    with sqlite3.connect(database) as conn:  # and nothing was added to it
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"customers"}


def test_a_database_of_a_newer_farm_is_refused_and_an_older_one_migrated(tmp_path: Path) -> None:
    import sqlite3

    from farm.history.engine import create_history_engine, migrate
    from farm.history.tables import SCHEMA_REVISION, VERSION_TABLE

    older, newer = tmp_path / "older.sqlite", tmp_path / "newer.sqlite"
    for database in (older, newer):
        migrate(create_history_engine(f"sqlite:///{database}"))
    with sqlite3.connect(newer) as conn:
        conn.execute(f"UPDATE {VERSION_TABLE} SET version_num = 'r9999'")
    refused = farm("history", "--history", f"sqlite:///{newer}", cwd=tmp_path)
    assert_one_line_error(refused, "newer agent-farm", "r9999")
    with sqlite3.connect(older) as conn:  # one revision back: the farm migrates it, as before
        conn.execute(f"UPDATE {VERSION_TABLE} SET version_num = 'r0001'")
        conn.execute("DROP TABLE farm_failure_modes")
    migrated = farm("history", "--history", f"sqlite:///{older}", cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    with sqlite3.connect(older) as conn:
        assert conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()[0] == SCHEMA_REVISION


def test_reading_a_missing_history_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "not" / "yet" / "history.sqlite"
    for command in (["history"], ["baseline", "list"], ["compare", "last", "last"]):
        result = farm(*command, "--history", f"sqlite:///{missing}", cwd=tmp_path)
        assert result.returncode in (0, 2) and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "not").exists()


def test_an_empty_baseline_name_is_refused(tmp_path: Path) -> None:
    result = farm("baseline", "set", "", "last", "--history", f"sqlite:///{tmp_path / 'h.sqlite'}", cwd=tmp_path)
    assert_one_line_error(result, "baseline name is empty")


# --------------------------------------------------------------------------- HOCON: secrets and includes


def test_a_secret_substituted_from_the_environment_is_masked_in_every_output(tmp_path: Path) -> None:
    secret = "sk-live-4f9a7c21e0"
    (tmp_path / "leak.hocon").write_text(
        '{ "interactions": [ { "text": "key is "${?MY_OPENAI_API_KEY}" and parallel is false" } ] }\n')
    env = {"MY_OPENAI_API_KEY": secret, "TOKENIZERS_PARALLELISM": "false", "FARM_DATA_DIR": str(tmp_path / "data")}
    outputs = ["r.json", "r.jsonl", "r.md", "r.html", "r.xml"]
    result = farm("test", "--no-progress", "--no-history", "-i", "leak.hocon", "-n", f"py:{AGENTS}:text",
                  *[arg for name in outputs for arg in ("-o", name)], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    texts = {name: (tmp_path / name).read_text() for name in outputs}
    journals = list((tmp_path / "data").rglob("*.jsonl"))
    texts.update({str(j): j.read_text() for j in journals})
    assert journals and all(secret not in text for text in texts.values()), [n for n, t in texts.items() if secret in t]
    assert "you said: key is ***" in texts["r.json"]
    assert "parallel is false" in texts["r.json"]  # a secret-named variable the suite does not use masks nothing


class _Recorder(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b'metadata { team = "shared" }\n'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_remote_include_is_refused_unless_allowed(tmp_path: Path) -> None:
    from tests.servers import serve_in_thread

    _Recorder.hits = []
    with serve_in_thread(HTTPServer(("127.0.0.1", 0), _Recorder)) as served:
        suite = tmp_path / "remote.hocon"
        suite.write_text(f'include url("{served.url}/shared.conf")\n'
                         'interactions = [ { "text": "hi", "response": { "text": { "keywords": "hi" } } } ]\n')
        refused = farm("test", "--no-progress", "--no-history", "-i", str(suite), "-n", f"py:{AGENTS}:text",
                       "-k", "nomatch", cwd=tmp_path)
        assert_one_line_error(refused, "remote.hocon", f"{served.url}/shared.conf", "--allow-remote-includes")
        assert _Recorder.hits == []
        allowed = farm("test", "--no-progress", "--no-history", "--allow-remote-includes", "-i", str(suite),
                       "-n", f"py:{AGENTS}:text", "--collect-only", cwd=tmp_path)
        assert allowed.returncode == 0, allowed.stderr
        assert _Recorder.hits == ["/shared.conf"]


def test_o_through_a_symlink_writes_its_target_but_never_the_suite_or_another_report(tmp_path: Path) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    (tmp_path / "to_suite.json").symlink_to("s.jsonl")
    (tmp_path / "to_report.md").symlink_to("r.md")
    (tmp_path / "reports").mkdir()
    (tmp_path / "latest.md").symlink_to("reports/today.md")
    echo = f"py:{AGENTS}:echo"
    at_suite = farm("test", "--no-progress", "--no-history", "-i", "s.jsonl", "-n", echo, "-o", "to_suite.json",
                    cwd=tmp_path)
    assert_one_line_error(at_suite, "to_suite.json (a symlink to", "input suites")
    at_report = farm("test", "--no-progress", "--no-history", "-i", "s.jsonl", "-n", echo, "-o", "r.md",
                     "-o", "to_report.md", cwd=tmp_path)
    assert_one_line_error(at_report, "to_report.md (a symlink to", "given twice")
    assert suite.read_text() == json.dumps({"id": "a", "input": "x"}) + "\n"
    through = farm("test", "--no-progress", "--no-history", "-i", "s.jsonl", "-n", echo, "-o", "latest.md",
                   cwd=tmp_path)
    assert through.returncode == 0, through.stderr
    assert (tmp_path / "latest.md").is_symlink() and "# " in (tmp_path / "reports" / "today.md").read_text()


# --------------------------------------------------------------------------- minors


def test_collect_only_marks_skipped_cases_and_counts_in_proper_english(tmp_path: Path) -> None:
    (tmp_path / "two.jsonl").write_text('{"id": "a", "input": "x"}\n{"id": "b", "input": "y", "skip": true}\n')
    (tmp_path / "one.jsonl").write_text('{"id": "a", "input": "x"}\n')
    two = farm("test", "-i", "two.jsonl", "-n", f"py:{AGENTS}:echo", "--collect-only", cwd=tmp_path)
    assert two.returncode == 0, two.stderr
    assert two.stdout.splitlines() == ["a", "b  (skipped: skip: true)"]
    one = farm("test", "-i", "one.jsonl", "-n", f"py:{AGENTS}:echo", "--collect-only", cwd=tmp_path)
    assert "collected 1 case (1 run)" in one.stderr, one.stderr
    ran = farm("test", "--no-progress", "--no-history", "-i", "one.jsonl", "-n", f"py:{AGENTS}:echo", "-o", "r.json",
               cwd=tmp_path)
    assert "of 1 case;" in ran.stderr and "1 run:" in ran.stderr and "1 cases" not in ran.stderr, ran.stderr


@pytest.mark.parametrize("command", [["test"], ["compare"], ["assess"], ["history"], ["report"], ["worker"],
                                     ["results"], ["status"], ["baseline", "set"]])
def test_help_texts_say_the_thing_instead_of_citing_the_spec(command: list[str]) -> None:
    result = farm(*command, "--help")
    assert result.returncode == 0 and "SPEC " not in result.stdout, result.stdout


def test_assess_prints_an_example_once_with_how_many_runs_gave_it(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text('{"id": "a", "input": "q", "expected": "yes", "metadata": {"quality": 0}}\n')
    result = farm("assess", "q.jsonl", "-n", QUALITY, "--runs", "5", cwd=tmp_path,
                  env={"FARM_DATA_DIR": str(tmp_path / "data")})
    assert result.returncode in (0, 1), result.stderr
    assert result.stdout.count("Example") == 1 and "Example 1 (5 runs gave this):" in result.stdout, result.stdout


def test_a_duplicate_id_is_reported_with_the_other_errors(tmp_path: Path) -> None:
    (tmp_path / "dup.jsonl").write_text('{"id": "a", "input": "x", "assert": {"type": "nosuch"}}\n'
                                        '{"id": "a", "input": "y"}\n')
    jsonl = farm("test", "--no-progress", "-i", "dup.jsonl", "-n", f"py:{AGENTS}:echo", cwd=tmp_path)
    assert_one_line_error(jsonl, "unknown check 'nosuch'", "dup.jsonl:2: id: duplicate id 'a'")
    (tmp_path / "d" / "a").mkdir(parents=True)
    (tmp_path / "d" / "s.jsonl").write_text('{"id": "a/x", "input": "x"}\n')
    (tmp_path / "d" / "a" / "x.hocon").write_text('{ "interactions": [ { "text": "hi" } ], "bogus": 1 }\n')
    hocon = farm("test", "--no-progress", "-i", "d", "-n", f"py:{AGENTS}:echo", cwd=tmp_path)
    assert_one_line_error(hocon, "bogus: unknown key", "duplicate id 'a/x'")


def test_a_hocon_agent_replaced_by_the_projects_package_yao_is_warned_about(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    (project / "tests").mkdir(parents=True)
    (project / "package.yao").write_text('{"type": "python", "entry": "agent.py:respond"}')
    (project / "agent.py").write_text("def respond(messages):\n    return 'hi'\n")
    (project / "tests" / "named.hocon").write_text('{ "agent": "music_nerd", "interactions": [ { "text": "hi" } ] }')
    (project / "tests" / "own.hocon").write_text('{ "agent": "shop", "interactions": [ { "text": "hi" } ] }')
    result = farm("test", "--no-progress", "--no-history", "-i", "tests", "-o", "r.json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "named.hocon: agent 'music_nerd' is not used" in result.stderr and "-n" in result.stderr
    assert "'shop' is not used" not in result.stderr
    chosen = farm("test", "--no-progress", "--no-history", "-i", "tests", "-n", f"py:{AGENTS}:text", "-o", "r.json",
                  cwd=project)
    assert chosen.returncode == 0 and "is not used" not in chosen.stderr, chosen.stderr


def test_bad_lines_in_a_journal_are_counted_and_reported(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "s.jsonl").write_text("".join(json.dumps({"id": c, "input": c}) + "\n" for c in "abc"))
    ran = farm("test", "--no-progress", "--no-history", "-i", "s.jsonl", "-n", f"py:{AGENTS}:echo", "--runs", "2",
               "-o", "r.json", cwd=tmp_path, env={"FARM_DATA_DIR": str(data)})
    assert ran.returncode == 0, ran.stderr
    [journal] = list(data.rglob("*.jsonl"))
    lines = journal.read_text().splitlines(keepends=True)
    results = [i for i, line in enumerate(lines) if json.loads(line).get("type") == "result"]
    broken = json.loads(lines[results[1]])
    broken["run_result"]["status"] = "no-such-status"
    lines[results[1]] = json.dumps(broken) + "\n"
    lines.insert(results[0] + 1, "{this is not json\n")
    journal.write_text("".join(lines))
    rendered = farm("report", str(journal), "-o", "again.json", cwd=tmp_path, env={"FARM_DATA_DIR": str(data)})
    assert rendered.returncode in (0, 1, 3), rendered.stderr
    assert "2 bad lines skipped" in rendered.stderr and "not JSON" in rendered.stderr, rendered.stderr
    report = json.loads((tmp_path / "again.json").read_text())
    assert report["metadata"]["journal_bad_lines"]["count"] == 2
    assert sum(case["runs"] for case in report["results"]) == 5  # six runs recorded, one line lost


# --------------------------------------------------------------------------- distributed


def test_a_detached_sweeps_tags_are_recorded_when_farm_results_collects_it(tmp_path: Path, farm_worker: Any,
                                                                          farm_cli: Any) -> None:
    suite = tmp_path / "d.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    history = f"sqlite:///{tmp_path / 'mine.sqlite'}"  # the submitter's own; the worker has none
    submitted = farm_cli.run("test", "-i", str(suite), "-n", f"py:{AGENTS}:echo", "--runs", "2", "--queue", "tagq",
                             "--detach", "--tag", "env=ci", env={"FARM_HISTORY_URL": history})
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    assert f"recorded in the history when `farm results {sweep_id}` collects it" in submitted.stderr
    farm_worker(queue="tagq")
    collected = farm_cli.run("results", sweep_id, "-o", str(tmp_path / "r.json"), timeout=120,
                             env={"FARM_HISTORY_URL": history})
    assert collected.returncode == 0, collected.stderr
    assert "(tags env=ci)" in collected.stderr
    shown = farm_cli.run("history", "--tag", "env=ci", "--json", env={"FARM_HISTORY_URL": history})
    assert [s["sweep_id"] for s in json.loads(shown.stdout)["sweeps"]] == [sweep_id], shown.stdout


def test_farm_status_says_when_runs_were_lost_with_a_killed_worker(tmp_path: Path, redis_client: Any,
                                                                  farm_worker: Any, farm_cli: Any) -> None:
    import time

    from farm import redis_keys

    suite = tmp_path / "l.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    submitted = farm_cli.run("test", "-i", str(suite), "-n", "py:tests/agents/distributed.py:slow", "--runs", "2",
                             "--queue", "lostq", "--detach", "--no-history")
    assert submitted.returncode == 0, submitted.stderr
    sweep_id = submitted.stdout.strip()
    worker = farm_worker(queue="lostq", concurrency=2, env={"FARM_TEST_SLEEP": "600"})
    deadline = time.monotonic() + 120
    while redis_client.hlen(redis_keys.running_key(sweep_id)) < 2:
        assert time.monotonic() < deadline, "the worker never began the runs"
        time.sleep(0.2)
    worker.kill()
    deadline = time.monotonic() + 120  # the dead worker's heartbeat expires within its TTL (at most 10 s)
    while True:
        text = farm_cli.run("status").stdout
        if "2 runs lost with a worker that died" in text:
            break
        assert time.monotonic() < deadline, text
        time.sleep(1)
    assert "published again by" in text
    assert json.loads(farm_cli.run("status", "--json").stdout)["sweeps"][0]["lost_runs"] == 2
    farm_cli.run("cancel", sweep_id)


def test_the_attached_submitter_says_when_runs_were_lost_with_a_killed_worker(tmp_path: Path, redis_client: Any,
                                                                             farm_worker: Any, farm_cli: Any) -> None:
    import signal
    import time

    from farm import redis_keys

    suite = tmp_path / "l.jsonl"
    suite.write_text(json.dumps({"id": "a", "input": "x"}) + "\n")
    worker = farm_worker(queue="lostq2", concurrency=2, env={"FARM_TEST_SLEEP": "600"})
    submitter = farm_cli.popen("test", "--no-progress", "--no-history", "-i", str(suite), "-n",
                               "py:tests/agents/distributed.py:slow", "--runs", "2", "--queue", "lostq2",
                               "-o", str(tmp_path / "r.json"))
    try:
        deadline = time.monotonic() + 120
        while not any(redis_client.hlen(k) >= 2 for k in redis_client.scan_iter(redis_keys.running_key("*"))):
            assert time.monotonic() < deadline and submitter.poll() is None, "the worker never began the runs"
            time.sleep(0.2)
        worker.kill()
        deadline = time.monotonic() + 120
        while "lost with a worker" not in farm_cli.run("status").stdout:  # the dead worker's heartbeat expired
            assert time.monotonic() < deadline
            time.sleep(1)
        time.sleep(3 * 5.0)  # then the submitter's worker check (every WORKER_CHECK_S = 5 s) tells it
    finally:
        submitter.send_signal(signal.SIGINT)
        submitter.send_signal(signal.SIGINT)
        _, stderr = submitter.communicate(timeout=120)
    assert "2 runs lost with a worker that died: published again by" in stderr, stderr
