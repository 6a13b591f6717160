"""docker-compose.yml, deploy/Dockerfile and the k8s manifests agree with each other and the CLI.

There is no Docker engine here: the files are parsed (PyYAML) and checked for the promises of
SPEC 9 (persistent Redis, scalable workers, password-protected Flower, nightly beat), and every
``farm`` command line in them is parsed by the real click commands.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from farm.cli import main
from workers.config import beat_schedule, parse_cron

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
K8S = {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted((ROOT / "deploy" / "k8s").glob("*.yaml"))}
SERVICES = COMPOSE["services"]
FARM_SERVICES = ("worker", "flower", "beat")


def _parse_farm(argv: list[str]) -> dict[str, Any]:
    """Parse a ``farm …`` command line with the real CLI; returns the command's parameters."""
    assert argv[0] == "farm", argv
    command = main.get_command(click.Context(main), argv[1])  # the group loads its commands lazily
    assert command is not None, argv
    with click.Context(command) as ctx:
        command.parse_args(ctx, list(argv[2:]))
        return dict(ctx.params)


def _default(value: str) -> str:
    """``${NAME:-default}`` → default (what compose substitutes when NAME is unset)."""
    match = re.fullmatch(r"\$\{\w+:-(.*)\}", value)
    return match.group(1) if match else value


def _k8s(kind: str, name: str) -> dict[str, Any]:
    docs = [d for docs in K8S.values() for d in docs if d and d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(docs) == 1, f"{kind}/{name}"
    return docs[0]


def test_compose_has_the_farm_services():
    assert set(SERVICES) == {"redis", "worker", "flower", "beat"}
    for name in FARM_SERVICES:
        assert SERVICES[name]["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (ROOT / SERVICES[name]["build"]["dockerfile"]).is_file()


def test_compose_redis_is_persistent_and_has_an_acl_user_instead_of_the_default_user():
    redis = SERVICES["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--requirepass" not in command
    assert "--user default off" in command  # no password-only access as the all-powerful default user
    farm_user = command.split("--user farm ", 1)[1]
    assert farm_user.startswith("on \">$$FARM_REDIS_PASSWORD\"")
    assert "'-@admin'" in farm_user and "'-@dangerous'" in farm_user
    assert "--user farm --pass" in redis["healthcheck"]["test"][1]
    volume, _, target = redis["volumes"][0].partition(":")
    assert target == "/data" and volume in COMPOSE["volumes"]
    assert ":?" in redis["environment"]["FARM_REDIS_PASSWORD"]  # no default password
    assert [_default(p.rsplit(":", 2)[0]) for p in redis["ports"]] == ["127.0.0.1"]
    # tests/distributed/test_redis_security.py starts this very command line and runs a sweep as `farm`.


def test_compose_services_share_one_broker_as_the_acl_user():
    urls = {SERVICES[name]["environment"]["FARM_BROKER_URL"] for name in FARM_SERVICES}
    assert len(urls) == 1
    url = urls.pop()
    assert url.startswith("redis://farm:${FARM_REDIS_PASSWORD") and "@redis:6379/" in url
    assert all(SERVICES[n]["depends_on"]["redis"]["condition"] == "service_healthy" for n in FARM_SERVICES)
    assert {_default(SERVICES[n]["environment"]["FARM_QUEUE"]) for n in FARM_SERVICES} == {"farm"}


def test_compose_worker_scales():
    worker = SERVICES["worker"]
    assert "container_name" not in worker and "ports" not in worker  # --scale worker=N needs both absent
    params = _parse_farm(worker["command"])
    assert params["concurrency"] == 64 and params["pool"] == "threads" and params["queues"] == "farm"


def test_compose_flower_requires_a_password_and_bounds_memory():
    flower = SERVICES["flower"]
    params = _parse_farm(flower["command"])
    assert params["address"] == "0.0.0.0" and params["max_tasks"] == 10_000
    # Published on the host's localhost unless FARM_FLOWER_BIND says otherwise.
    assert flower["ports"] == [f"${{FARM_FLOWER_BIND:-127.0.0.1}}:{params['port']}:{params['port']}"]
    assert _default(flower["ports"][0].rsplit(":", 2)[0]) == "127.0.0.1"
    assert ":?" in flower["environment"]["FARM_FLOWER_PASSWORD"]
    assert flower["environment"]["FARM_FLOWER_USER"]


def test_compose_beat_schedules_the_nightly_suite():
    beat = SERVICES["beat"]
    assert beat["command"][:4] == ["celery", "-A", "workers.app", "beat"]
    env = beat["environment"]
    cron = _default(env["FARM_NIGHTLY_CRON"])
    parse_cron(cron)
    schedule = beat_schedule({"FARM_NIGHTLY_SUITE": "suites/nightly.jsonl", "FARM_NIGHTLY_CRON": cron})
    assert schedule["farm-nightly"]["task"] == "farm.nightly"
    assert schedule["farm-nightly"]["args"] == ("suites/nightly.jsonl",)
    assert beat_schedule({}) == {}


def test_dockerfile_installs_the_project_as_non_root():
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    assert text.count("FROM python:3.11-slim") == 1
    assert "pip install -c constraints.txt ." in text  # the versions CI tested
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", text, flags=re.MULTILINE))
    for copied in re.findall(r"^COPY\s+(\S+)", text, flags=re.MULTILINE):
        copied = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], copied)
        assert (ROOT / copied).exists(), copied


def test_the_image_installs_the_agents_own_requirements():
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    default = re.search(r"^ARG AGENT_REQUIREMENTS=(\S+)", text, flags=re.MULTILINE)
    assert default and (ROOT / default.group(1)).is_file()
    assert "COPY ${AGENT_REQUIREMENTS} ./agent-requirements.txt" in text
    assert "pip install -r agent-requirements.txt" in text
    for name in FARM_SERVICES:  # compose passes the file it is given, defaulting to the same one
        build_arg = SERVICES[name]["build"]["args"]["AGENT_REQUIREMENTS"]
        assert _default(build_arg) == default.group(1)


def test_compose_gives_workers_the_agents_secrets_from_an_env_file():
    for name in FARM_SERVICES:
        assert SERVICES[name]["env_file"] == [{"path": "deploy/workers.env", "required": False}]
    assert (ROOT / "deploy" / "workers.env.example").is_file()
    for ignore in (".gitignore", ".dockerignore"):  # the secrets file never reaches git or the image
        assert "deploy/workers.env" in (ROOT / ignore).read_text().splitlines()


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    spec = deployment["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert deployment["spec"]["selector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"][
        "labels"].items()
    return spec["containers"][0]


def _secret_refs(container: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {e["name"]: (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
            for e in container["env"] if "valueFrom" in e}


@pytest.mark.parametrize("deployment", ["farm-worker", "farm-flower"])
def test_k8s_secrets_exist_in_the_example_secret(deployment):
    secret = _k8s("Secret", "agent-farm")
    for name, key in _secret_refs(_container(_k8s("Deployment", deployment))).values():
        assert name == "agent-farm" and key in secret["stringData"]


def test_k8s_worker_runs_farm_worker():
    container = _container(_k8s("Deployment", "farm-worker"))
    params = _parse_farm(container["command"])
    assert params["concurrency"] == 64 and params["hostname"] == "farm@%h"
    assert "FARM_BROKER_URL" in _secret_refs(container)
    assert container["image"] == SERVICES["worker"]["image"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    data = {e["name"]: e.get("value") for e in container["env"]}["FARM_DATA_DIR"]
    assert data in mounts and "workingDir" not in container  # no project: bundles unpack into the data dir


def test_k8s_flower_service_reaches_the_container():
    container = _container(_k8s("Deployment", "farm-flower"))
    params = _parse_farm(container["command"])
    port = container["ports"][0]
    assert port["containerPort"] == params["port"] and params["max_tasks"] == 10_000
    assert {"FARM_FLOWER_USER", "FARM_FLOWER_PASSWORD"} <= set(_secret_refs(container))
    service = _k8s("Service", "farm-flower")
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert service["spec"]["selector"].items() <= _k8s("Deployment", "farm-flower")["spec"]["template"][
        "metadata"]["labels"].items()
