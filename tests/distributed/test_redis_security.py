"""Redis security the README promises, tried for real: TLS (``rediss://``) and the compose ACL user.

- TLS: a ``redis-server`` listening only on a TLS port with a certificate signed by a CA made
  in the test (``openssl``); a sweep runs over ``rediss://…?ssl_cert_reqs=required&ssl_ca_certs=``
  with a real worker, and a submitter trusting another CA is refused (exit 3), not connected.
- ACL: the very ``redis-server`` command line of docker-compose.yml (default user off, user
  ``farm`` without admin or dangerous commands) started here; a worker and a submitter run a sweep
  as ``redis://farm:PASSWORD@…``, and the user cannot reconfigure the server.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import yaml

from tests.support.broker_servers import self_signed, start_redis
from tests.support.distributed_sweeps import AGENTS, PARITY_CASES, write_suite
from tests.support.servers import ROOT, free_port

pytestmark = [pytest.mark.redis, pytest.mark.slow]

PASSWORD = "s3cret-pw-0123"


def _tls_url(port: int, ca: Path) -> str:
    return f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required&ssl_ca_certs={ca}"


def test_a_sweep_runs_over_tls_with_the_ca_in_the_url(tmp_path, farm_worker, farm_cli, counting_agent):
    certs = self_signed(tmp_path)
    tls_port = free_port()
    server = start_redis(tmp_path, "--port", "0", "--tls-port", str(tls_port), "--tls-cert-file", str(certs.cert),
                         "--tls-key-file", str(certs.key), "--tls-ca-cert-file", str(certs.ca),
                         "--tls-auth-clients", "no", listen_port=tls_port)
    try:
        url = _tls_url(tls_port, certs.ca)
        with pytest.raises(redis.ConnectionError):  # nothing but TLS is spoken there
            redis.Redis(port=tls_port, socket_connect_timeout=2, socket_timeout=2).ping()
        farm_worker(broker=url, queue="tls")
        suite = write_suite(tmp_path / "tls.jsonl", PARITY_CASES[:2])
        out, agent = tmp_path / "tls.json", counting_agent()
        done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "3", "--queue", "tls",
                            "--broker", url, "-o", str(out), "--no-progress")
        assert done.returncode == 1, done.stderr  # by_run fails every third run
        report = json.loads(out.read_text())
        assert [c["runs"] for c in report["results"]] == [3, 3] and report["summary"]["total_runs"] == 6
        agent.assert_once_each(6)
        status = farm_cli.run("status", "--json", "--broker", url)
        assert status.returncode == 0 and json.loads(status.stdout)["broker"].startswith("rediss://"), status.stderr
        # A client that trusts another CA is refused: the certificate really is checked.
        (tmp_path / "other").mkdir()
        other = self_signed(tmp_path / "other")
        refused = farm_cli.run("test", "-i", str(suite), "-n", f"{AGENTS}:by_run", "--queue", "tls", "--broker",
                               _tls_url(tls_port, other.ca), "--no-progress", timeout=120)
        assert refused.returncode == 3, refused.stderr
        assert "certificate verify failed" in refused.stderr.lower() or "ssl" in refused.stderr.lower(), refused.stderr
    finally:
        server.stop()


def test_a_tls_url_must_say_how_to_check_the_certificate(farm_cli):
    done = farm_cli.run("status", "--broker", "rediss://:pw@127.0.0.1:1/0")
    assert done.returncode == 2
    assert "ssl_cert_reqs=required&ssl_ca_certs=" in done.stderr and ":pw@" not in done.stderr


def _compose() -> dict[str, object]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _compose_redis_argv(password: str) -> list[str]:
    """The compose file's redis-server arguments, as ``sh -c`` would pass them."""
    command = _compose()["services"]["redis"]["command"]  # type: ignore[index]
    assert command[:2] == ["sh", "-c"]
    words = shlex.split(command[2].replace("$$FARM_REDIS_PASSWORD", password))
    assert words[:2] == ["exec", "redis-server"], words
    return words[2:]


def _compose_broker_url(password: str, port: int) -> str:
    url = _compose()["x-farm-env"]["FARM_BROKER_URL"]  # type: ignore[index]
    url = url.replace("${FARM_REDIS_PASSWORD:?set FARM_REDIS_PASSWORD}", password)
    return url.replace("@redis:6379/", f"@127.0.0.1:{port}/")


def test_workers_connect_as_the_compose_acl_user(tmp_path, farm_worker, farm_cli, counting_agent):
    server = start_redis(tmp_path, *_compose_redis_argv(PASSWORD))
    try:
        url = _compose_broker_url(PASSWORD, server.port)
        assert url == f"redis://farm:{PASSWORD}@127.0.0.1:{server.port}/0"
        with pytest.raises(redis.AuthenticationError):  # no default user to fall back on
            redis.Redis(port=server.port).ping()
        farm = redis.Redis.from_url(url)
        assert farm.ping()
        for forbidden in (("CONFIG", "SET", "dir", "/tmp"), ("FLUSHALL",), ("ACL", "SETUSER", "intruder", "on"),
                          ("KEYS", "*"), ("MODULE", "LIST")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                farm.execute_command(*forbidden)
        # The healthcheck of the compose file, run against this server.
        cli = shutil.which("redis-cli")
        if cli is not None:
            health = _compose()["services"]["redis"]["healthcheck"]["test"][1]  # type: ignore[index]
            health = health.replace("$$FARM_REDIS_PASSWORD", PASSWORD).replace("redis-cli", f"{cli} -p {server.port}")
            assert subprocess.run(["sh", "-c", health], check=False, timeout=30).returncode == 0
        worker = farm_worker(broker=url, queue="acl")
        assert f"redis://farm:**@127.0.0.1:{server.port}" in worker.text()
        assert PASSWORD not in worker.text()  # the password never reaches the worker's log
        suite = write_suite(tmp_path / "acl.jsonl", PARITY_CASES[:2])
        out, agent = tmp_path / "acl.json", counting_agent()
        done = farm_cli.run("test", "-i", str(suite), "-n", agent.ref, "--runs", "3", "--queue", "acl",
                            "--broker", url, "-o", str(out), "--no-progress")
        assert done.returncode == 1, done.stderr
        assert PASSWORD not in done.stderr + done.stdout
        report = json.loads(out.read_text())
        assert report["summary"]["total_runs"] == 6
        agent.assert_once_each(6)
        assert PASSWORD not in out.read_text()
        status = farm_cli.run("status", "--json", "--broker", url)
        assert status.returncode == 0, status.stderr
        assert PASSWORD not in status.stdout and json.loads(status.stdout)["queues"]["acl"] == 0
        stored = [k for k in farm.scan_iter("*")]
        assert stored and not any(PASSWORD.encode() in k + (farm.dump(k) or b"") for k in stored)
    finally:
        server.stop()


def test_an_agents_secret_stays_out_of_redis_reports_and_logs(tmp_path, redis_client, redis_server, farm_worker,
                                                              farm_cli):
    """The prompt example on a worker: its key ($ENV.EXAMPLE_LLM_KEY) reaches the LLM server and
    nothing else: not the sweep's keys or values in Redis, the reports, the worker's log or the
    submitter's output."""
    from tests.support.servers import openai_server

    key = "sk-farm-secret-0f9e8d7c6b5a"
    app = tmp_path / "prompt"
    shutil.copytree(ROOT / "examples" / "prompt", app)
    with openai_server(key=key) as served:
        connector = app / "connectors" / "local" / "keywords.conn.yao"
        connector.write_text(connector.read_text().replace("http://127.0.0.1:8001", served.url), encoding="utf-8")
        env = {"EXAMPLE_LLM_KEY": key}
        worker = farm_worker(queue="secret", env=env)
        outputs = [app / "r.json", app / "r.jsonl", app / "r.md", app / "r.html"]
        argv = ["test", "-i", "assistants/keywords/tests/inputs.jsonl", "--runs", "2", "--queue", "secret",
                "--broker", redis_server, "--no-progress", *(a for o in outputs for a in ("-o", str(o)))]
        done = subprocess.run([sys.executable, "-m", "farm", *argv], cwd=app, env=farm_cli.env(**env),
                              capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr
        report = json.loads(outputs[0].read_text())
        assert report["summary"]["total_runs"] == report["summary"]["by_status"]["passed"] > 0  # the key worked
    sweep_keys = list(redis_client.scan_iter("*"))
    assert sweep_keys
    raw = redis.Redis.from_url(redis_server)
    assert not [k for k in sweep_keys if key in k or key.encode() in (raw.dump(k) or b"")]
    for path in outputs:
        assert key not in path.read_text(), path
    assert key not in worker.text() and key not in done.stdout + done.stderr
