"""What served a run (SPEC 25): the model and fingerprint the provider answered with, its request
id, or the commit of a ``py:``/``cmd:`` agent's repository; and the counts a case and a sweep keep.

A provider can swap the model behind a name: a verdict that moved while the served model (or its
``system_fingerprint``) changed is not necessarily the agent's doing.
"""

from __future__ import annotations

from pydantic import Field

from farm.models.base import FarmModel


class Served(FarmModel):
    """What answered one run (its last answered turn); a field nobody reported is None."""

    model: str | None = None
    """The answer's ``model`` (OpenAI-compatible answers): what was served, not what was asked."""
    system_fingerprint: str | None = None
    """The answer's ``system_fingerprint``: the provider's backend configuration."""
    request_id: str | None = None
    """The provider's request id header (``x-request-id``, ``request-id``) of the last answer."""
    commit: str | None = None
    """``py:``/``cmd:`` agents: the commit of the git repository holding the agent's file."""
    server_version: str | None = None
    """neuro-san agents: the server's neuro-san version, as its health check (``GET /healthz``,
    ``versions["neuro-san"]``) reports it, asked once per agent and process."""


class ServedCounts(FarmModel):
    """Runs per served model and per ``system_fingerprint`` (a case's or a whole sweep's)."""

    models: dict[str, int] = Field(default_factory=dict)
    system_fingerprints: dict[str, int] = Field(default_factory=dict)
    commits: dict[str, int] = Field(default_factory=dict)
    server_versions: dict[str, int] = Field(default_factory=dict)
    """neuro-san server versions (``Served.server_version``)."""

    def add(self, served: Served | None, runs: int = 1) -> None:
        if served is None:
            return
        for counts, value in ((self.models, served.model), (self.system_fingerprints, served.system_fingerprint),
                              (self.commits, served.commit), (self.server_versions, served.server_version)):
            if value:
                counts[value] = counts.get(value, 0) + runs

    def merge(self, other: ServedCounts | None) -> None:
        if other is None:
            return
        for mine, theirs in ((self.models, other.models), (self.system_fingerprints, other.system_fingerprints),
                             (self.commits, other.commits), (self.server_versions, other.server_versions)):
            for value, count in theirs.items():
                mine[value] = mine.get(value, 0) + count

    def __bool__(self) -> bool:
        return bool(self.models or self.system_fingerprints or self.commits or self.server_versions)

    def sorted(self) -> ServedCounts:
        """Most runs first (ties by name), as reports list them."""
        def order(counts: dict[str, int]) -> dict[str, int]:
            return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return ServedCounts(models=order(self.models), system_fingerprints=order(self.system_fingerprints),
                            commits=order(self.commits), server_versions=order(self.server_versions))

    def text(self) -> str:
        """``gpt-4o-2024-08-06 ×20 (fp_abc ×20)`` for people; '' when nothing was reported."""
        models = ", ".join(f"{m} ×{n}" for m, n in self.models.items())
        prints = ", ".join(f"{f} ×{n}" for f, n in self.system_fingerprints.items())
        commits = ", ".join(f"commit {c[:12]} ×{n}" for c, n in self.commits.items())
        servers = ", ".join(f"neuro-san {v} ×{n}" for v, n in self.server_versions.items())
        text = models + (f" ({prints})" if models and prints else prints)
        return "; ".join(p for p in (text, commits, servers) if p)

