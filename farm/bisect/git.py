"""The git side of ``farm bisect``: refs, the commits between GOOD and BAD, throw-away worktrees.

Every problem found before a probe runs is bad input (``InputError``, exit 2). Worktrees live in
one temporary directory and are all removed when the bisection ends, however it ends (Ctrl-C
included): ``git worktree remove --force``, then ``prune`` for any the removal missed. A bisection
killed outright (SIGKILL, a crash) cannot remove its own: the next one in the repository removes
them as it starts. Each bisection holds a lock on a file of its directory while it lives (the
kernel drops it with the process), so a bisection running beside keeps its worktrees.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import IO

from farm.errors import FarmRuntimeError, InputError


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise InputError("farm bisect needs git on PATH") from None
    if check and done.returncode != 0:
        raise FarmRuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done


def repo_root(cwd: Path) -> Path:
    done = git(cwd, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise InputError(f"{cwd}: not a git repository (farm bisect checks out commits of one)")
    return Path(done.stdout.strip())


def resolve(root: Path, ref: str, flag: str) -> str:
    done = git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise InputError(f"{flag} {ref}: not a commit of {root}")
    return done.stdout.strip()


def commits_between(root: Path, good: str, bad: str) -> list[str]:
    """GOOD's descendants that are BAD's ancestors, oldest first, BAD last (GOOD excluded)."""
    if good == bad:
        raise InputError("--good and --bad are the same commit")
    if git(root, "merge-base", "--is-ancestor", good, bad, check=False).returncode != 0:
        raise InputError(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}")
    listed = git(root, "rev-list", "--ancestry-path", "--reverse", f"{good}..{bad}").stdout.split()
    return listed


def subject(root: Path, sha: str) -> str:
    return git(root, "log", "-1", "--format=%s", sha, check=False).stdout.strip()


PREFIX = "farm-bisect-"
"""The temporary directory of a bisection's worktrees is named so (``tempfile.mkdtemp``)."""
LOCK_NAME = ".farm-bisect.lock"


def _hold_lock(base: Path) -> IO[str]:
    lock = (base / LOCK_NAME).open("w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def _in_use(base: Path) -> bool:
    """A live bisection holds its directory's lock; a killed one's lock went with it (or, made by a
    farm before the lock, there is none)."""
    try:
        with (base / LOCK_NAME).open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(lock, fcntl.LOCK_UN)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def remove_stale(root: Path) -> list[Path]:
    """Remove the worktrees of ``root`` that an earlier, killed bisection left: those in a
    ``farm-bisect-*`` directory of the temporary directory that no live bisection holds. Returns them."""
    temp = Path(tempfile.gettempdir()).resolve()
    listed = git(root, "worktree", "list", "--porcelain", check=False).stdout
    stale = []
    for line in listed.splitlines():
        if not line.startswith("worktree "):
            continue
        path = Path(line.removeprefix("worktree "))
        base = path.parent
        if not base.name.startswith(PREFIX) or base.parent.resolve() != temp or _in_use(base):
            continue
        # a bisect killed inside `git worktree add` leaves that worktree locked ("initializing"):
        # a locked one needs --force twice, and prune skips it
        git(root, "worktree", "unlock", str(path), check=False)
        git(root, "worktree", "remove", "--force", "--force", str(path), check=False)
        shutil.rmtree(base, ignore_errors=True)
        stale.append(path)
    if stale:
        git(root, "worktree", "prune", check=False)  # a directory already gone (a cleaned /tmp) too
    return stale


class Worktrees:
    """One detached worktree per probed commit, under a temporary directory; all removed on exit.
    ``stale``: the worktrees a killed bisection left, removed first."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stale = remove_stale(root)
        self.base = Path(tempfile.mkdtemp(prefix=PREFIX))
        self._lock = _hold_lock(self.base)  # before any worktree: one listed under base is always held
        self.made: dict[str, Path] = {}

    def __enter__(self) -> Worktrees:
        return self

    def get(self, sha: str) -> Path:
        if sha not in self.made:
            path = self.base / sha[:12]
            git(self.root, "worktree", "add", "--detach", "--quiet", str(path), sha)
            self.made[sha] = path
        return self.made[sha]

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.remove_all()

    def remove_all(self) -> None:
        for path in self.made.values():
            git(self.root, "worktree", "remove", "--force", "--force", str(path), check=False)
        self.made.clear()
        shutil.rmtree(self.base, ignore_errors=True)
        self._lock.close()
        git(self.root, "worktree", "prune", check=False)
