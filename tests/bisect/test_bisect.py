"""``farm bisect`` (SPEC 18) on a generated git repository of 8 commits where a ``py:`` agent's pass
probability drops from 0.95 to 0.55 at commit 5: the real CLI in a subprocess, real worktrees,
real ``farm test`` probes recorded in a history; and the search on simulated probes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from farm.bisect.sequential import Sprt
from farm.history.store import HistoryStore
from farm.plan.batch import exact_pattern
from tests.support.servers import ROOT
from tests.support.simulated_bisect import trials

AGENT = '''import os, random
from pathlib import Path

P = {p}


def respond(messages, context):
    # the k-th call at this pass probability draws the k-th number of a seeded stream (runs are serial)
    draws = Path(os.environ["FARM_TEST_DRAWS"]) / f"{{P}}"
    with draws.open("a") as f:
        f.write(".")
    k = draws.stat().st_size
    if os.environ.get("FARM_TEST_SLOW"):
        import time
        time.sleep(float(os.environ["FARM_TEST_SLOW"]))
    hold = os.environ.get("FARM_TEST_HOLD")  # past the first HOLD_AFTER calls, wait while the file exists
    if hold and k > int(os.environ["FARM_TEST_HOLD_AFTER"]):
        import time
        while Path(hold).exists():
            time.sleep(0.05)
    return "yes" if random.Random(f"{{os.environ['FARM_TEST_SEED']}}:{{P}}:{{k}}").random() < P else "no"
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def make_repo(root: Path, drop_at: int = 5, commits: int = 8, after: float = 0.55) -> list[str]:
    """Commits 1..``commits``; the agent passes with 0.95 before ``drop_at``, ``after`` from it on."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "suite.jsonl").write_text(json.dumps({"id": "answer", "input": "q", "expected": "yes"}) + "\n" +
                                      json.dumps({"id": "answer-twice", "input": "q2", "expected": "yes"}) + "\n")
    shas = []
    for i in range(1, commits + 1):
        (root / "agent.py").write_text(AGENT.format(p=0.95 if i < drop_at else after))
        (root / "notes.txt").write_text(f"change {i}\n")
        git(root, "add", ".")
        git(root, "commit", "-qm", f"commit {i}")
        shas.append(git(root, "rev-parse", "HEAD"))
    return shas


def bisect(repo: Path, tmp: Path, *args: str, seed: int = 1) -> subprocess.CompletedProcess[str]:
    draws = tmp / f"draws-{seed}"
    draws.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FARM_TEST_SEED": str(seed), "FARM_TEST_DRAWS": str(draws),
           "FARM_DATA_DIR": str(tmp / "data")}
    return subprocess.run([sys.executable, "-m", "farm", "bisect", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


@pytest.mark.slow  # three bisections of real farm test probes: about a minute on a busy machine
def test_names_the_commit_where_the_pass_probability_dropped(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo")
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for seed in (1, 2, 3):
        out, md = tmp_path / f"b{seed}.json", tmp_path / f"b{seed}.md"
        done = bisect(tmp_path / "repo", tmp_path, "--good", shas[0], "--bad", "main", "-o", str(out), "-o", str(md),
                      "--", "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--parallel", "1", "--history", url,
                      seed=seed)
        assert done.returncode == 0, done.stderr
        doc = json.loads(out.read_text())
        assert doc["first_bad"] == shas[4], (seed, doc)
        assert (doc["good"], doc["bad"]) == (shas[0], shas[-1])
        assert set(doc["cases"]) <= {"answer", "answer-twice"} and doc["cases"]
        probed = [p["commit"] for p in doc["probes"]]
        assert probed[:2] == [shas[0], shas[-1]] and set(probed) <= set(shas)
        assert all(p["verdict"] in ("good", "bad", "inconclusive") and p["runs"] > 0 for p in doc["probes"])
        assert doc["runs"] == sum(p["runs"] for p in doc["probes"])
        assert f"first bad commit: {shas[4]} commit 5" in done.stdout
        assert f"`{shas[4][:12]}`" in md.read_text()
    assert git(tmp_path / "repo", "worktree", "list").count("\n") == 0  # every worktree removed
    store = HistoryStore.open(url)
    try:
        tagged = store.sweeps(last=500, tag=("bisect", doc["bisect_id"]))
    finally:
        store.close()
    assert len(tagged) >= len(doc["probes"]) and {s.git_commit for s in tagged} <= set(shas)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a script's background job starts


@pytest.mark.parametrize(("sig", "code", "started_ignoring_sigint"), [
    (signal.SIGINT, 130, False), (signal.SIGTERM, 143, False), (signal.SIGINT, 130, True)],
    ids=["ctrl-c", "sigterm", "sigint-to-a-background-job"])
def test_a_stop_signal_removes_the_worktrees_and_tells_what_was_learned(
        tmp_path: Path, sig: signal.Signals, code: int, started_ignoring_sigint: bool) -> None:
    shas = make_repo(tmp_path / "repo")
    draws = tmp_path / "draws"
    draws.mkdir()
    temp = tmp_path / "temp"  # the worktrees' own: another test's bisect of the same commits runs beside (xdist)
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FARM_TEST_SEED": "1", "FARM_TEST_DRAWS": str(draws),
           "FARM_DATA_DIR": str(tmp_path / "data"), "FARM_TEST_SLOW": "0.05", "TMPDIR": str(temp)}
    out = tmp_path / "b.json"
    proc = subprocess.Popen([sys.executable, "-m", "farm", "bisect", "--good", shas[0], "--bad", shas[-1], "-o",
                             str(out), "--", "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--parallel", "1",
                             "--no-history"], cwd=tmp_path / "repo", env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ignore_sigint if started_ignoring_sigint else None)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # GOOD has run: BAD's probe is running now
        seen.append(line)
        if line.startswith("  GOOD "):
            break
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == code, "".join(seen) + stderr
    assert "interrupted: what was learned so far" in stdout, stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["first_bad"] is None
    assert doc["probes"][0]["commit"] == shas[0] and doc["probes"][0]["runs"] == 60
    assert git(tmp_path / "repo", "worktree", "list").count("\n") == 0
    assert list(temp.iterdir()) == []  # the worktrees' directory is gone


def test_the_worktrees_of_a_killed_bisect_are_removed_by_the_next_one_not_those_of_a_live_one(
        tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", commits=3, after=0.95)
    draws = tmp_path / "draws"
    draws.mkdir()
    temp = tmp_path / "temp"  # the worktrees' own temporary directory (xdist runs other bisects beside)
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FARM_TEST_SEED": "1", "FARM_TEST_DRAWS": str(draws),
           "FARM_DATA_DIR": str(tmp_path / "data"), "TMPDIR": str(temp)}
    args = [sys.executable, "-m", "farm", "bisect", "--good", shas[0], "--bad", shas[-1], "--runs", "5", "--",
            "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--parallel", "1", "--no-history"]
    hold = tmp_path / "hold"

    def start(slow: str, held: bool = False) -> subprocess.Popen[str]:
        extra = {"FARM_TEST_SLOW": slow}
        if held:  # GOOD's 10 calls run; BAD's probe then waits in its worktree until the hold is lifted
            (tmp_path / "held-draws").mkdir()
            hold.touch()
            extra |= {"FARM_TEST_HOLD": str(hold), "FARM_TEST_HOLD_AFTER": "10",
                      "FARM_TEST_DRAWS": str(tmp_path / "held-draws")}
        return subprocess.Popen(args, cwd=tmp_path / "repo", env=env | extra,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def until_probing(proc: subprocess.Popen[str]) -> str:
        assert proc.stderr is not None
        seen = ""
        for line in proc.stderr:  # GOOD has run: BAD's probe is running in its worktree now
            seen += line
            if line.startswith("  GOOD "):
                return seen
        raise AssertionError(seen + proc.communicate(timeout=60)[1])

    def trees() -> set[str]:
        return {line.split()[0] for line in git(tmp_path / "repo", "worktree", "list").splitlines()[1:]}

    killed = start("0.05")
    until_probing(killed)
    os.killpg(killed.pid, signal.SIGKILL)  # the bisect and its probe: nothing of theirs runs any more
    killed.wait(timeout=60)
    left = trees()
    assert left and all(path.startswith(str(temp)) for path in left)  # what a killed bisect leaves
    live = start("0", held=True)  # still probing (held) while the next one runs
    try:
        said = until_probing(live)
        assert f"removed {len(left)} worktree(s) an earlier farm bisect left when it was killed" in said
        live_trees = trees()
        assert live_trees and not live_trees & left
        done = subprocess.run(args, cwd=tmp_path / "repo", env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 1, done.stderr  # nothing regressed
        assert "removed" not in done.stderr
        assert trees() >= live_trees  # a live one's kept (it may have added one since)
    finally:
        hold.unlink(missing_ok=True)
        os.killpg(live.pid, signal.SIGTERM)
        live.communicate(timeout=300)
    assert trees() == set() and list(temp.iterdir()) == []


def test_nothing_regressed_is_exit_1(tmp_path: Path) -> None:
    shas = make_repo(tmp_path / "repo", commits=3, after=0.95)
    done = bisect(tmp_path / "repo", tmp_path, "--good", shas[0], "--bad", shas[-1], "-o", str(tmp_path / "b.json"),
                  "--", "-i", "suite.jsonl", "-n", "py:agent.py:respond", "--parallel", "1", "--no-history")
    assert done.returncode == 1, done.stderr
    assert "no case regressed between GOOD and BAD" in done.stdout
    assert json.loads((tmp_path / "b.json").read_text())["first_bad"] is None


@pytest.mark.parametrize(("args", "message"), [
    (("--good", "nope", "--bad", "main", "--", "-i", "suite.jsonl"), "--good nope: not a commit of"),
    (("--good", "main", "--bad", "main", "--", "-i", "suite.jsonl"), "--good and --bad are the same commit"),
    (("--good", "main~1", "--bad", "main", "--", "--no-such-flag"), "farm test arguments: No such option"),
    (("--good", "main~1", "--bad", "main", "-o", "x.txt", "--", "-i", "s"), "-o x.txt: farm bisect writes .json or"),
    (("--good", "main", "--bad", "main~1", "--", "-i", "suite.jsonl"), "is not an ancestor of --bad"),
    (("--good", "main~1", "--bad", "main", "--", "-i", "suite.jsonl", "--runs", "5"), "--runs is farm bisect's"),
    (("--good", "main~1", "--bad", "main", "--", "-i", "suite.jsonl", "--estimate"), "--estimate writes no report"),
])
def test_bad_input_is_exit_2_before_anything_runs(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    make_repo(tmp_path / "repo", commits=2)
    done = bisect(tmp_path / "repo", tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert not (tmp_path / "data").exists() or not list((tmp_path / "data").rglob("*.jsonl"))


def test_outside_a_repository_is_exit_2(tmp_path: Path) -> None:
    done = bisect(tmp_path, tmp_path, "--good", "a", "--bad", "b", "--", "-i", "s.jsonl")
    assert done.returncode == 2 and "not a git repository" in done.stderr


def test_test_arguments_that_are_bad_input_at_both_ends_are_exit_2(tmp_path: Path) -> None:
    """SPEC 26: the probes of GOOD and BAD both exit 2 (a mistyped suite or agent): bad input."""
    shas = make_repo(tmp_path / "repo", commits=2)
    done = bisect(tmp_path / "repo", tmp_path, "--good", shas[0], "--bad", shas[1], "--", "-i", "missing.jsonl",
                  "-n", "py:agent.py:respond", "--no-history")
    assert done.returncode == 2, done.stderr
    assert "the test arguments are bad input at GOOD and at BAD" in done.stderr
    assert "farm test exited 2" in done.stderr and "missing.jsonl" in done.stderr
    assert git(tmp_path / "repo", "worktree", "list").count("\n") == 0


def test_a_probe_that_cannot_run_at_one_end_only_is_exit_3(tmp_path: Path) -> None:
    """An agent that does not exist yet at GOOD: the probe there fails, BAD's runs (exit 3)."""
    repo = tmp_path / "repo"
    shas = make_repo(repo, commits=2)
    git(repo, "mv", "agent.py", "agent2.py")
    git(repo, "commit", "-qm", "rename the agent")
    done = bisect(repo, tmp_path, "--good", shas[1], "--bad", "main", "--", "-i", "suite.jsonl",
                  "-n", "py:agent2.py:respond", "--no-history")
    assert done.returncode == 3, done.stderr
    assert "probe at" in done.stderr and "farm test exited 2" in done.stderr
    assert git(repo, "worktree", "list").count("\n") == 0


def test_exact_patterns_match_one_id_only() -> None:
    import fnmatch

    for case_id in ("case", "a*b", "[x]", "!x", "q?"):
        pattern = exact_pattern(case_id)
        assert fnmatch.fnmatchcase(case_id, pattern) and not fnmatch.fnmatchcase(case_id + "x", pattern)
        assert not fnmatch.fnmatchcase("x" + case_id, pattern)


def test_the_sequential_test_decides_by_its_bounds() -> None:
    sprt = Sprt(0.95, 0.55)
    assert sprt.decide(10, 10) == "good" and sprt.decide(5, 10) == "bad" and sprt.decide(9, 10) == "inconclusive"


def test_on_simulated_probes_it_names_the_commit_in_nearly_every_trial() -> None:
    """20 trials (seed 30): the full figures are in benchmarks/README.md (bench_bisect.py)."""
    found = trials(20, seed=30)
    assert sum(t.named == "c5" for t in found) >= 19
    assert all(t.runs < 50 * t.commits_probed for t in found)


def test_a_worktree_left_locked_by_a_bisect_killed_inside_git_worktree_add_is_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git locks a worktree while adding it ("initializing"): killed then, the lock stays, plain
    `remove --force` and `prune` skip it, and the next bisect found it still listed."""
    import tempfile

    from farm.bisect.git import PREFIX, remove_stale

    shas = make_repo(tmp_path / "repo", commits=2)
    temp = tmp_path / "temp"
    (temp / f"{PREFIX}killed").mkdir(parents=True)
    tree = temp / f"{PREFIX}killed" / shas[0][:12]
    git(tmp_path / "repo", "worktree", "add", "--detach", str(tree), shas[0])
    git(tmp_path / "repo", "worktree", "lock", "--reason", "initializing", str(tree))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    assert remove_stale(tmp_path / "repo") == [tree]
    assert git(tmp_path / "repo", "worktree", "list").count("\n") == 0  # only the repository itself
