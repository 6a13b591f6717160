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
from typing import ClassVar

import pytest

from tests.support.servers import ROOT

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
    assert_one_line_error(result, "smoke_tests: no such file or directory (to send it to the agent as a message, "
                                  "use -m)")
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


@pytest.mark.parametrize("supervise", ["--supervise", "--no-supervise"])
def test_a_worker_option_celery_does_not_know_is_one_clear_line_not_a_restart_loop(tmp_path: Path,
                                                                                   supervise: str) -> None:
    """``farm worker --queue x`` (farm test's spelling; the worker's is -Q): a usage error, exit 2,
    where the supervised child raised a traceback and was restarted every 30 s for ever (issue 39)."""
    import signal

    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")} | {"PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "farm", "worker", "--broker", "redis://127.0.0.1:1/0",
                                "--processes", "1", supervise, "--queue", "x"], cwd=tmp_path, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("farm worker with an unknown option kept running")
    result = subprocess.CompletedProcess(process.args, process.returncode, "", stderr)
    assert_one_line_error(result, "No such option '--queue'")


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
    from tests.support.servers import serve_in_thread

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


def test_a_mistyped_command_gets_did_you_mean(tmp_path: Path) -> None:
    assert_one_line_error(farm("tset", cwd=tmp_path), "No such command 'tset'. Did you mean 'test'?")
    assert "Did you mean" not in farm("xyzzy", cwd=tmp_path).stderr  # nothing close: Click's own words


def test_farm_assess_of_a_missing_path_says_what_it_takes_not_farm_tests_hint(tmp_path: Path) -> None:
    result = farm("assess", "nothere.json", cwd=tmp_path)
    assert_one_line_error(result, "nothere.json: no such file or directory (give a JSON report, a suite file or a "
                                  "directory of suites)")
    assert "-m" not in result.stderr


def test_dash_o_writes_jsonl_to_stdout_or_the_format_r_names(tmp_path: Path) -> None:
    """``-o -`` (SPEC 26): the JSONL stream on stdout, nothing else there; with ``-r report.markdown`` the
    Markdown report; twice, or for a reporter agent's document, bad input."""
    suite = tmp_path / "s.jsonl"
    suite.write_text('{"id": "a", "input": "hi"}\n{"id": "b", "input": "ho"}\n')
    jsonl = farm("test", "--no-progress", "-i", str(suite), "-n", f"py:{AGENTS}:echo", "--runs", "2", "-o", "-",
                 cwd=tmp_path)
    assert jsonl.returncode == 0, jsonl.stderr
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [line["type"] for line in lines].count("result") == 4 and lines[-1]["type"] == "summary"
    assert not list(tmp_path.glob("output-*")) and not (tmp_path / "-").exists()
    markdown = farm("test", "--no-progress", "-i", str(suite), "-n", f"py:{AGENTS}:echo", "-o", "-", "-r",
                    "report.markdown", cwd=tmp_path)
    assert markdown.returncode == 0 and markdown.stdout.startswith("#"), markdown.stdout[:200]
    assert_one_line_error(farm("test", "-i", str(suite), "-n", f"py:{AGENTS}:echo", "-o", "-", "-o", "-",
                               cwd=tmp_path), "-o -: given twice")
