"""What a plain ``farm test`` imports, and when (issue 45): no timing, ``sys.modules`` itself.

A ``farm test`` against one agent imports neither Celery nor Redis at all, no SQLAlchemy to record
a SQLite history (it leaves the sweep in the history's inbox: ``farm.history.inbox``), and aiohttp
without its import-time load of the system's CA bundles (aio-libs/aiohttp#9029: the contexts aiohttp
builds at import load them when they first wrap a connection). Of the farm's own modules it loads
none that only another kind of sweep uses (``NOT_FOR_A_PLAIN_SWEEP``). Each sweep runs in a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.servers import ROOT, json_agent_server

WATCHED = ("sqlalchemy", "celery", "redis", "kombu", "aiohttp")

PROBE = """
import json, sys
from farm.cli.main import main
try:
    main(sys.argv[1:], prog_name="farm")
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {watched!r})
roots = sorted({{m.split(".")[0] for m in loaded}})
stats = None
if "aiohttp.connector" in sys.modules:
    connector = sys.modules["aiohttp.connector"]
    stats = [connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509"],
             connector._SSL_CONTEXT_UNVERIFIED.cert_store_stats()["x509"]]
print(json.dumps({{"after": roots, "default_context_certs": stats, "modules": sorted(sys.modules)}}), file=sys.stderr)
"""

AGENT = """
import json, os, sys

def respond(message):
    seen = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(os.environ["WATCHED"])))
    with open(os.environ["SEEN_FILE"], "w") as out:
        json.dump(seen, out)
    return "pong"
"""


def run_probe(tmp_path: Path, *args: str) -> dict[str, object]:
    (tmp_path / "suite.jsonl").write_text(json.dumps({"id": "C1", "input": "say pong",
                                                      "assert": {"type": "contains", "value": "pong"}}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FARM_")}
    env.update(PYTHONPATH=str(ROOT), FARM_DATA_DIR=str(tmp_path / ".farm-data"), WATCHED=json.dumps(WATCHED),
               SEEN_FILE=str(tmp_path / "seen.json"))
    done = subprocess.run([sys.executable, "-c", PROBE.format(watched=set(WATCHED)), "test", "-i", "suite.jsonl",
                           "--runs", "1", "--no-progress", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("{"), done.stdout + done.stderr
    return dict(json.loads(last))


def inbox_entries(tmp_path: Path, database: Path | None = None) -> list[str]:
    inbox = (database or tmp_path / ".farm-data" / "history.sqlite").with_suffix(".sqlite.inbox")
    assert not inbox.with_suffix("").exists()  # the database: untouched
    return [p.suffix for p in inbox.iterdir()]


def test_a_python_agent_sweep_leaves_the_history_to_its_next_reader_without_sqlalchemy(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    probe = run_probe(tmp_path, "-n", "py:agent.py:respond")
    assert json.loads((tmp_path / "seen.json").read_text()) == []  # while the agent ran: none of them
    assert probe["after"] == []  # nor after: the sweep waits in the history's inbox
    assert inbox_entries(tmp_path) == [".json"]
    given = tmp_path / "given.sqlite"  # a --history sqlite:/// file: its own inbox, no SQLAlchemy either
    assert run_probe(tmp_path, "-n", "py:agent.py:respond", "--history", f"sqlite:///{given}")["after"] == []
    assert inbox_entries(tmp_path, given) == [".json"]


def test_an_http_agent_sweep_loads_only_aiohttp(tmp_path: Path) -> None:
    """The row of issue 45: a 1-case, 1-run ``farm test`` of an HTTP agent, history recorded as by default."""
    with json_agent_server() as served:
        probe = run_probe(tmp_path, "-n", served.url)
    assert probe["after"] == ["aiohttp"]
    assert inbox_entries(tmp_path) == [".json"]


def test_a_sweep_that_reads_the_history_records_it_directly(tmp_path: Path) -> None:
    """``--order failing-first`` opens the store before the runs: the sweep is recorded there, not left."""
    (tmp_path / "agent.py").write_text(AGENT)
    probe = run_probe(tmp_path, "-n", "py:agent.py:respond", "--order", "failing-first")
    assert probe["after"] == ["sqlalchemy"]
    assert (tmp_path / ".farm-data" / "history.sqlite").is_file()
    assert not (tmp_path / ".farm-data" / "history.sqlite.inbox").exists()


def test_an_http_agent_sweep_without_history_loads_only_aiohttp_and_no_ca_bundle(tmp_path: Path) -> None:
    with json_agent_server() as served:
        probe = run_probe(tmp_path, "-n", served.url, "--no-history")
    assert probe["after"] == ["aiohttp"]
    assert probe["default_context_certs"] == [0, 0]  # aiohttp's own contexts: nothing loaded yet


NOT_FOR_A_PLAIN_SWEEP = (
    "farm.reports.junit", "farm.reports.markdown", "farm.reports.summary",  # -o report.xml / .md, -r report.summary
    "farm.suites.hocon", "pyhocon",  # a .hocon or .conf suite
    "farm.bundles", "tarfile",  # a distributed sweep's bundle
    "farm.fleet.replay",  # --record / --replay
    "farm.quarantine.entries", "farm.quarantine.plan",  # a farm-quarantine.toml, or --quarantine FILE
    "farm.cli.history",  # farm compare / history / baseline (farm test's flags: farm.cli.history_flags)
    "multiprocessing",  # a large suite read by forked processes
)
"""Modules (exact names) that only other sweeps or commands use, each loaded where it is used (issue 45)."""


def test_a_plain_http_sweep_loads_no_module_of_another_kind_of_sweep(tmp_path: Path) -> None:
    with json_agent_server() as served:
        probe = run_probe(tmp_path, "-n", served.url, "--no-history", "-o", "out.json")
    loaded = set(probe["modules"])  # type: ignore[arg-type]
    assert (tmp_path / "out.json").is_file()
    assert {"farm.reports.json_report", "farm.fleet.runtime", "farm.suites.jsonl", "aiohttp"} <= loaded  # seen
    assert sorted(loaded.intersection(NOT_FOR_A_PLAIN_SWEEP)) == []


def test_aiohttps_default_context_still_trusts_the_system_store_when_used() -> None:
    code = """
import ssl, sys
from farm.agents.client_import import import_aiohttp
import_aiohttp()
import aiohttp.connector as connector
context = connector._SSL_CONTEXT_VERIFIED
before = context.cert_store_stats()["x509"]
context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="example.org")
print(before, context.cert_store_stats()["x509"], ssl.create_default_context().cert_store_stats()["x509"],
      context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname)
"""
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60, check=True)
    before, after, system, verifying = done.stdout.split()
    assert before == "0" and after == system and verifying == "True"  # the same trust, loaded on first use


def test_a_method_another_library_put_on_sslcontext_is_put_back() -> None:
    code = """
import ssl
from farm.agents.client_import import import_aiohttp
def theirs(self):
    return "theirs"
ssl.SSLContext.set_default_verify_paths = theirs
import_aiohttp()
print(ssl.SSLContext.__dict__.get("set_default_verify_paths") is theirs)
"""
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True"]
