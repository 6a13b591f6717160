"""Bundles without a broker (SPEC 24, ``farm.bundles``): what a bundle holds, its hash, its cap, a
worker's copy, and two bundles' code imported apart in one process."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from farm.agents.options import AgentOptions
from farm.agents.ref import AgentRef
from farm.bundles.pack import BundleRootRefused, BundleTooLarge, pack
from farm.bundles.relocate import Relocation
from farm.bundles.roots import project_roots
from farm.bundles.unpack import BundleError, unpacked
from farm.imports import resolve_callable
from farm.imports.namespaces import register
from farm.models.bundle import BundleRef


def _names(data: bytes) -> list[str]:
    return tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))).getnames()


def _project(root: Path, version: str) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text("import helpers\nfrom pkg import sub\n\ndef respond(messages, context=None):\n"
                                   "    return helpers.VERSION + sub.NAME\n")
    (root / "helpers.py").write_text(f"VERSION = {version!r}\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub.py").write_text("from . import deep\nNAME = '/' + deep.X\n")
    (root / "pkg" / "deep.py").write_text(f"X = {version!r}\n")
    return root


def test_a_bundle_holds_the_tree_less_ignored_files_and_secrets(tmp_path):
    root = _project(tmp_path / "proj", "one")
    (root / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (root / ".env.local").write_text("X=1\n")
    (root / "data").mkdir()
    (root / "data" / "big.bin").write_bytes(b"x" * 10)
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "agent.cpython-311.pyc").write_bytes(b"")
    (root / ".farmignore").write_text("# data sets stay home\ndata/\n")
    (root / "sub").mkdir()
    (root / "sub" / ".gitignore").write_text("*.log\n")
    (root / "sub" / "run.log").write_text("noise")
    (root / "sub" / "keep.txt").write_text("kept")
    (tmp_path / "id_rsa").write_text("PRIVATE KEY")
    (root / "key").symlink_to(tmp_path / "id_rsa")  # a link out of the project
    (root / "same.py").symlink_to(root / "helpers.py")  # a link within it
    bundle = pack([root])
    names = _names(bundle.data)
    assert "0/proj/key" not in names and "0/proj/same.py" in names
    assert "0/proj/agent.py" in names and "0/proj/pkg/deep.py" in names and "0/proj/sub/keep.txt" in names
    assert not [n for n in names if ".env" in n or "data/" in n or "__pycache__" in n or n.endswith(".log")]
    assert b"sk-secret" not in gzip.decompress(bundle.data)
    assert pack([root]).ref.sha256 == bundle.ref.sha256  # the same tree, the same bytes
    (root / "helpers.py").write_text("VERSION = 'two'\n")
    assert pack([root]).ref.sha256 != bundle.ref.sha256


def test_over_the_cap_names_the_largest_files(tmp_path):
    root = _project(tmp_path / "proj", "one")
    (root / "huge.bin").write_bytes(b"x" * 3000)
    (root / "large.bin").write_bytes(b"x" * 2000)
    with pytest.raises(BundleTooLarge) as caught:
        pack([root], max_bytes=4000)
    assert caught.value.exit_code == 2
    message = caught.value.message
    assert "huge.bin" in message and "large.bin" in message and "--bundle-max" in message
    assert message.index("huge.bin") < message.index("large.bin")


def test_roots_are_git_top_levels_or_own_directories_and_merge(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "suites").mkdir()
    (repo / "suites" / "a.jsonl").write_text("")
    loose = tmp_path / "loose"
    (loose / "pkg").mkdir(parents=True)
    (loose / "pkg" / "__init__.py").write_text("")
    (loose / "pkg" / "agent.py").write_text("")
    roots = project_roots([repo / "suites" / "a.jsonl", repo / "suites", loose / "pkg" / "agent.py",
                           tmp_path / "missing"])
    assert roots == [loose, repo]  # a module travels with its package: the package's parent


def test_a_worker_copy_is_verified_and_two_bundles_import_apart(tmp_path):
    root = _project(tmp_path / "proj", "one")
    first = pack([root])
    _project(root, "two")
    second = pack([root])
    data = tmp_path / "data"
    with pytest.raises(BundleError, match="refused"):
        unpacked(data, first.ref, lambda: second.data)
    with pytest.raises(BundleError, match="gone"):
        unpacked(data, first.ref, lambda: None)
    copies = []
    for bundle in (first, second):
        copy = unpacked(data, bundle.ref, lambda b=bundle: b.data)
        register(copy, bundle.ref.short)
        copies.append(copy / "0" / "proj")
    assert unpacked(data, first.ref, lambda: None) == copies[0].parent.parent  # once: not fetched again
    answers = [resolve_callable("agent.py:respond", copy)([]) for copy in copies]
    assert answers == ["one/one", "two/two"]
    module_answers = [resolve_callable("agent:respond", copy)([]) for copy in copies]
    assert module_answers == ["one/one", "two/two"]


def test_a_missing_third_party_module_is_named(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "agent.py").write_text("import surely_not_installed_xyz\n\ndef respond(m):\n    return 'x'\n")
    bundle = pack([root])
    copy = unpacked(tmp_path / "data", bundle.ref, lambda: bundle.data)
    register(copy, bundle.ref.short)
    with pytest.raises(ValueError, match="surely_not_installed_xyz"):
        resolve_callable("agent.py:respond", copy / "0" / "proj")


def test_a_bundle_holding_a_farm_package_still_imports_the_workers_farm(tmp_path):
    """A bundle of the farm's own repository (its tests' agents) holds ``farm/``: an agent's
    ``from farm.models import Reply`` must still be the worker's class, or its reply is not one
    (seen in CI: every run "Object of type Reply is not JSON serializable")."""
    import farm.models

    root = tmp_path / "proj"
    (root / "farm").mkdir(parents=True)
    (root / "farm" / "__init__.py").write_text("SHADOW = True\n")
    (root / "agent.py").write_text("from farm.models import Reply\n\ndef respond(m):\n    return Reply(text='ok')\n")
    bundle = pack([root])
    copy = unpacked(tmp_path / "data", bundle.ref, lambda: bundle.data)
    register(copy, bundle.ref.short)
    reply = resolve_callable("agent.py:respond", copy / "0" / "proj")([])
    assert isinstance(reply, farm.models.Reply)


def test_relocation_moves_the_paths_under_a_root_and_nothing_else(tmp_path):
    root = _project(tmp_path / "proj", "one")
    bundle = pack([root])
    move = Relocation(bundle.ref, Path("/data/b"))
    assert move.path(f"{root}/suites") == "/data/b/0/proj/suites"
    assert move.path(str(root)) == "/data/b/0/proj"
    assert move.path(f"{root}x/y") == f"{root}x/y"  # a sibling that shares the prefix stays
    command = AgentRef("command", f"python {root}/tool.py --flag", str(root))
    assert move.agent(command).target == "python /data/b/0/proj/tool.py --flag"
    options = AgentOptions.from_env(root)
    assert move.options(options).cwd == "/data/b/0/proj"
    manifest = AgentRef("manifest", str(root), str(root))
    assert move.agent(manifest).label == "proj"  # a directory keeps its name: reports name the agent alike


def test_a_copy_names_the_commit_its_root_was_packed_at(tmp_path):
    import subprocess

    from farm.agents.repo_commit import repo_commit

    repo = _project(tmp_path / "repo", "one")
    (repo / ".gitignore").write_text("*.key\n")
    (repo / "model.key").write_text("private")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit",
                                                               "-qm", "one"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                         text=True).stdout.strip()
    loose = _project(tmp_path / "loose", "two")
    (repo / "untracked.txt").write_text("new")  # not committed: packed all the same (not ignored)
    bundle = pack([loose, repo])
    assert bundle.ref.commits == ("", sha)
    names = _names(bundle.data)
    assert "1/repo/untracked.txt" in names and "1/repo/model.key" not in names
    assert not [n for n in names if ".git/" in n]
    copy = unpacked(tmp_path / "data", bundle.ref, lambda: bundle.data)
    assert repo_commit.__wrapped__(copy / "1" / "repo" / "pkg") == sha  # as from the tree itself
    assert repo_commit.__wrapped__(copy / "0" / "loose") is None  # outside git: none, as in-process


def test_an_agent_reference_names_its_files(tmp_path):
    from farm.bundles.roots import agent_paths

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "agent.py").write_text("")
    (tmp_path / "tool.sh").write_text("")
    (tmp_path / "assistants" / "bot").mkdir(parents=True)
    assert agent_paths("py:pkg.agent:respond", tmp_path) == [tmp_path / "pkg" / "agent.py"]
    assert agent_paths(f"py:{tmp_path}/pkg/agent.py:respond", Path("/")) == [tmp_path / "pkg" / "agent.py"]
    assert agent_paths("cmd:bash tool.sh --fast", tmp_path) == [tmp_path / "tool.sh"]
    import sys

    assert agent_paths(f"cmd:{sys.executable} tool.sh", tmp_path) == [tmp_path / "tool.sh"]  # not the interpreter
    assert agent_paths("assistants/bot", tmp_path) == [tmp_path / "assistants" / "bot"]
    assert agent_paths("http://host/agent", tmp_path) == [] and agent_paths(None, tmp_path) == []


def test_a_new_copy_removes_copies_unused_for_long(tmp_path):
    import os

    root = _project(tmp_path / "proj", "one")
    first = pack([root])
    data = tmp_path / "data"
    old = unpacked(data, first.ref, lambda: first.data)
    os.utime(old / ".farm-bundle", (1_000_000, 1_000_000))  # unused since 1970
    half_made = data / "bundles" / ".deadbeef.1.x"
    half_made.mkdir()
    os.utime(half_made, (1_000_000, 1_000_000))
    _project(root, "two")
    second = pack([root])
    recent = unpacked(data, second.ref, lambda: second.data, keep_s=3600)
    assert recent.is_dir() and not old.exists() and not half_made.exists()
    third_root = _project(tmp_path / "other", "three")
    third = pack([third_root])
    unpacked(data, third.ref, lambda: third.data, keep_s=3600)
    assert recent.is_dir()  # used within the hour: kept


def test_relocation_keeps_the_fleet_plans_agent_keys_in_step_with_the_agents(tmp_path):
    from farm.agents.options import AgentOptions
    from farm.plan.fleet import FleetPlan, agent_ref_key
    from farm.plan.sweep_plan import build_plan
    from farm.run.environment import RunEnvironment

    root = _project(tmp_path / "proj", "one")
    bundle = pack([root])
    agents = [AgentRef("python", f"{root}/agent.py:respond", str(root)),
              AgentRef("command", f"python {root}/tool.py", str(root)), AgentRef("http", "http://h/a", str(root))]
    fleet = FleetPlan(agent_keys={agent_ref_key(a): f"key{n}" for n, a in enumerate(agents)},
                      unmetered=[agent_ref_key(a) for a in agents[:2]])
    plan = build_plan("s", [], env=RunEnvironment(), options=AgentOptions.from_env(root), fleet=fleet)
    move = Relocation(bundle.ref, tmp_path / "copy")
    moved = move.plan(plan)
    for n, agent in enumerate(agents):  # what a worker's fleet control looks up for the moved agent
        assert moved.fleet.agent_keys[agent_ref_key(move.agent(agent))] == f"key{n}"
    assert moved.fleet.unmetered == [agent_ref_key(move.agent(a)) for a in agents[:2]]


def test_a_bundles_traceback_shows_its_source_lines(tmp_path):
    import traceback

    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "boom.py").write_text("def explode():\n    raise RuntimeError('kaboom here')\n")
    (root / "agent.py").write_text("from pkg import boom\n\ndef respond(m):\n    return boom.explode()\n")
    bundle = pack([root])
    copy = unpacked(tmp_path / "data", bundle.ref, lambda: bundle.data)
    register(copy, bundle.ref.short)
    fn = resolve_callable("agent.py:respond", copy / bundle.ref.place(0))
    with pytest.raises(RuntimeError) as caught:
        fn([])
    text = "".join(traceback.format_exception(caught.value))
    assert "raise RuntimeError('kaboom here')" in text and "boom.py" in text


@pytest.mark.parametrize("where", ["home", "temp", "slash"])
def test_a_root_too_broad_is_refused(tmp_path, monkeypatch, where):
    home = tmp_path / "home" / "me"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    root = {"home": home, "temp": tmp_path / "tmp", "slash": Path("/")}[where]
    with pytest.raises(BundleRootRefused, match="--no-bundle") as refused:
        pack([root])
    assert str(root) in str(refused.value)
    with pytest.raises(BundleRootRefused):
        pack([tmp_path / "home"])  # a parent of home


def test_secret_looking_files_are_never_packed(tmp_path):
    root = _project(tmp_path / "proj", "one")
    for name in (".ssh/id_ed25519", ".aws/credentials", ".gnupg/k", ".docker/config.json", ".netrc", ".envrc",
                 ".pypirc", ".git-credentials", "tls/server.pem", "tls/server.key", "id_rsa.pub", "sub/.env.prod"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("SECRET")
    names = _names(pack([root]).data)
    assert "0/proj/agent.py" in names
    assert not [n for n in names if not n.endswith(".py")], names


def _hostile(members: list[tuple[tarfile.TarInfo, bytes]], *, content_bytes: int = 0) -> tuple[BundleRef, bytes]:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for info, body in members:
            info.size = len(body) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(body) if info.isreg() else None)
    data = gzip.compress(raw.getvalue(), mtime=0)
    return BundleRef(hashlib.sha256(data).hexdigest(), ("/x/proj",), files=len(members),
                     content_bytes=content_bytes), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def test_whatever_stops_an_unpack_is_a_bundle_error_naming_the_bundle(tmp_path):
    escape, escape_data = _hostile([(tarfile.TarInfo("0/proj/../../../escape.py"), b"x")], content_bytes=1)
    with pytest.raises(BundleError, match=escape.short):
        unpacked(tmp_path / "a", escape, lambda: escape_data)
    assert not (tmp_path / "escape.py").exists()
    not_gzip = b"this is not gzip"
    ref = BundleRef(hashlib.sha256(not_gzip).hexdigest(), ("/x/proj",))
    with pytest.raises(BundleError, match=ref.short):
        unpacked(tmp_path / "b", ref, lambda: not_gzip)
    cut = gzip.compress(b"\0" * 4096)[:-12]
    ref = BundleRef(hashlib.sha256(cut).hexdigest(), ("/x/proj",))
    with pytest.raises(BundleError, match=ref.short):
        unpacked(tmp_path / "c", ref, lambda: cut)
    good = pack([_project(tmp_path / "proj", "one")])
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "bundles").write_text("a file where the copies go")  # an unwritable place
    with pytest.raises(BundleError, match=good.ref.short):
        unpacked(tmp_path / "d", good.ref, lambda: good.data)


def test_a_bundle_holds_plain_files_a_sha256_and_no_bomb(tmp_path):
    def never() -> bytes:
        raise AssertionError("fetched")

    for bad in ("../../etc", "A" * 64, "0" * 63):
        with pytest.raises(BundleError, match="sha256"):
            unpacked(tmp_path / "data", BundleRef(bad, ("/x/proj",)), never)
    for special in (_link("0/proj/key", "/etc/passwd"), _link("0/proj/hard", "0/proj/a.py", tarfile.LNKTYPE),
                    _link("0/proj/fifo", "", tarfile.FIFOTYPE)):
        ref, data = _hostile([(tarfile.TarInfo("0/proj/a.py"), b"x"), (special, b"")], content_bytes=1)
        with pytest.raises(BundleError, match="neither a file nor a directory"):
            unpacked(tmp_path / "data", ref, lambda d=data: d)
    ref, data = _hostile([(tarfile.TarInfo("0/proj/zeros"), b"\0" * 5_000_000)], content_bytes=10)
    with pytest.raises(BundleError, match="inflates past"):
        unpacked(tmp_path / "data", ref, lambda: data)
    assert not list((tmp_path / "data" / "bundles").iterdir())  # nothing half-made is left


def test_outside_git_the_directory_a_relative_agent_resolves_from_is_a_root(tmp_path):
    from farm.bundles.roots import refs_paths

    project = tmp_path / "proj"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "a.py").write_text("def respond(messages, context=None):\n    return 'a'\n")
    (project / "suites").mkdir()
    named = [project / "suites", *refs_paths(["py:agents/a.py:respond"], project)]
    roots = project_roots(named)
    assert roots == [project]  # not <proj>/agents and <proj>/suites: <proj>, the agent's base_dir, moves too
    bundle = pack(roots)
    copy = unpacked(tmp_path / "data", bundle.ref, lambda: bundle.data)
    move = Relocation(bundle.ref, copy)
    agent = move.agent(AgentRef(kind="python", target="agents/a.py:respond", base_dir=str(project)))
    assert Path(agent.base_dir) == copy / "0" / "proj" and (Path(agent.base_dir) / "agents" / "a.py").is_file()
    options = move.options(AgentOptions(str(project), str(project / "assistants"), "/elsewhere"))
    assert Path(options.cwd) == copy / "0" / "proj"
    assert refs_paths([f"py:{project}/agents/a.py:respond"], Path("/")) == [project / "agents" / "a.py"]  # absolute
    assert refs_paths(["http://host/agent", None], project) == []
