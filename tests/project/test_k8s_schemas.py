"""deploy/k8s/ against schemas, with no cluster and nothing fetched (SPEC 24, issue 43 item 3).

Kubernetes' own kinds are validated with ``kubernetes-validate``'s bundled schemas (strict: an
unknown field is an error); KEDA's ``ScaledObject`` and ``TriggerAuthentication`` with the
openAPIV3Schema of KEDA's CRDs, vendored in tests/k8s_schemas/ (source, version and hashes in its
SOURCE.md). Each validator is also shown to reject a broken manifest, so a pass means something.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
SCHEMAS = Path(__file__).resolve().parents[1] / "k8s_schemas"
KUBERNETES = "1.31.0"
"""The Kubernetes version validated against (kubernetes-validate's own version: its newest schemas)."""

MANIFESTS = [(path.name, doc) for path in sorted(K8S.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())
             if doc]
KEDA_CRDS = {"ScaledObject": "keda.sh_scaledobjects.yaml",
             "TriggerAuthentication": "keda.sh_triggerauthentications.yaml"}
REDIS_SCALER_KEYS = {
    "address", "addresses", "addressFromEnv", "host", "hosts", "hostFromEnv", "port", "ports", "portFromEnv",
    "username", "usernameFromEnv", "password", "passwordFromEnv", "unsafeSsl", "listLength",
    "activationListLength", "listName", "databaseIndex", "enableTLS",
}
"""Trigger metadata KEDA v2.20.2's redis scaler reads (pkg/scalers/redis_scaler.go, ``keda:"name=…"``
tags with order triggerMetadata; ``resolvedEnv`` ones also as NAMEFromEnv)."""
REDIS_AUTH_PARAMS = {"address", "addresses", "username", "password", "host", "hosts", "port", "ports", "tls",
                     "cert", "key", "keyPassword", "ca", "sentinelUsername", "sentinelPassword", "sentinelMaster"}
"""The same scaler's parameters a TriggerAuthentication may give (order authParams)."""


def _docs(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in MANIFESTS if doc["kind"] == kind]


def _crd(kind: str) -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load((SCHEMAS / KEDA_CRDS[kind]).read_text())
    return crd


def _keda_errors(doc: dict[str, Any]) -> list[str]:
    """What KEDA's CRD says is wrong with ``doc`` (its apiVersion must be a version the CRD serves)."""
    crd = _crd(doc["kind"])
    group, _, version = doc["apiVersion"].partition("/")
    assert group == crd["spec"]["group"], doc["apiVersion"]
    served = {v["name"]: v for v in crd["spec"]["versions"] if v.get("served")}
    assert version in served, f"{doc['apiVersion']}: KEDA serves {sorted(served)}"
    schema = served[version]["schema"]["openAPIV3Schema"]
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_the_vendored_crds_are_keda_v2_20_2_unchanged():
    source = (SCHEMAS / "SOURCE.md").read_text()
    assert "v2.20.2" in source
    for name in KEDA_CRDS.values():
        digest = hashlib.sha256((SCHEMAS / name).read_bytes()).hexdigest()
        assert f"`{name}` | `config/crd/bases/{name}` | `{digest}`" in source, name
    assert _crd("ScaledObject")["metadata"]["name"] == "scaledobjects.keda.sh"


@pytest.mark.parametrize(("name", "doc"), [m for m in MANIFESTS if m[1]["kind"] not in KEDA_CRDS],
                         ids=[f"{n}:{d['kind']}" for n, d in MANIFESTS if d["kind"] not in KEDA_CRDS])
def test_kubernetes_kinds_validate_strictly(name, doc):
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


@pytest.mark.parametrize(("name", "doc"), [m for m in MANIFESTS if m[1]["kind"] in KEDA_CRDS],
                         ids=[f"{n}:{d['kind']}" for n, d in MANIFESTS if d["kind"] in KEDA_CRDS])
def test_keda_kinds_validate_against_kedas_crds(name, doc):
    assert _keda_errors(doc) == []


def test_the_validators_reject_broken_manifests():
    deployment = copy.deepcopy(_docs("Deployment")[0])
    deployment["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []  # a typo
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)
    scaled = copy.deepcopy(_docs("ScaledObject")[0])
    scaled["spec"]["minReplicaCount"] = "zero"
    del scaled["spec"]["scaleTargetRef"]["name"]
    scaled["spec"]["triggers"][0]["metadata"]["listLength"] = 64
    errors = " ".join(_keda_errors(scaled))
    assert "spec/minReplicaCount" in errors and "'name' is a required property" in errors
    assert "spec/triggers/0/metadata/listLength" in errors
    scaled["spec"]["triggers"] = []
    assert any("spec/triggers" in e for e in _keda_errors(scaled))


def test_the_scaled_object_scales_the_worker_deployment_to_zero_on_its_queue():
    (scaled,) = _docs("ScaledObject")
    spec = scaled["spec"]
    deployment = next(d for d in _docs("Deployment") if d["metadata"]["name"] == spec["scaleTargetRef"]["name"])
    assert spec["scaleTargetRef"].get("kind", "Deployment") == "Deployment"
    assert spec["minReplicaCount"] == 0 and spec["maxReplicaCount"] >= 1
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "redis"
    assert set(trigger["metadata"]) <= REDIS_SCALER_KEYS
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    command = " ".join(container["command"])
    queue = env.get("FARM_QUEUE") or (m.group(1) if (m := re.search(r"(?:-Q|--queues)[ =](\S+)", command)) else "farm")
    assert trigger["metadata"]["listName"] == queue  # kombu's Redis transport: the queue is a list of that name
    assert int(trigger["metadata"]["listLength"]) >= 1
    assert trigger["metadata"].get("activationListLength", "0") == "0"


def test_the_trigger_authentication_reads_keys_of_the_example_secret():
    (scaled,) = _docs("ScaledObject")
    names = {t["authenticationRef"]["name"] for t in scaled["spec"]["triggers"] if "authenticationRef" in t}
    auths = {a["metadata"]["name"]: a for a in _docs("TriggerAuthentication")}
    assert names <= set(auths)
    (secret,) = [s for s in _docs("Secret") if s["metadata"]["name"] == "agent-farm"]
    for name in names:
        for ref in auths[name]["spec"]["secretTargetRef"]:
            assert ref["parameter"] in REDIS_AUTH_PARAMS
            assert ref["name"] == "agent-farm" and ref["key"] in secret["stringData"], ref
    broker = secret["stringData"]["broker-url"]
    assert secret["stringData"]["redis-address"] in broker  # the same Redis as the workers' broker
    assert f"//{secret['stringData']['redis-username']}:" in broker


def test_workers_need_no_project_volume():
    """Sweeps carry their code (bundles, SPEC 24): the workers mount no claim, only their data directory."""
    (deployment,) = [d for d in _docs("Deployment") if d["metadata"]["name"] == "farm-worker"]
    pod = deployment["spec"]["template"]["spec"]
    assert all("persistentVolumeClaim" not in volume for volume in pod.get("volumes", []))
    (container,) = pod["containers"]
    assert "workingDir" not in container
    env = {item["name"]: item.get("value") for item in container["env"]}
    mounts = {mount["mountPath"] for mount in container.get("volumeMounts", [])}
    assert env["FARM_DATA_DIR"] in mounts  # bundles unpack into a writable directory of their own
