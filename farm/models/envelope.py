"""The sweep's envelope, typed: who ran what, when, how, and the sections pre-run contributors add.

``SweepPlan.envelope`` carries what is known before the first run (the suite, ``--runs``, the
fleet's switches, the history's facts, the quarantine, ``--otel``); ``SweepReport.envelope``
adds the sweep's identity (id, agent, connector, times, version) and what was learned after
(retry bias, the baseline comparison, a journal's bad lines). ``metadata`` is left to the user.

Written out, every field is a key of the report's ``metadata``, as it always was (a section's
fields too: ``metadata.tags``, ``metadata.history``, ``metadata.adaptive``, …), and only the
fields that were set, None included (``metadata.connector`` is ``null`` when no connector was
given); ``SweepEnvelope.split`` reads them back, so ``jq`` scripts and older reports keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from farm.models.base import FarmModel, JsonValue, empty_list

Recorder = Literal["submitter", "worker", "off"]
"""Who records the sweep in the history (``metadata.history``): ``farm test`` itself, the worker
that closes a detached sweep (or ``farm results``), or nobody."""


class _SetOnly(FarmModel):
    """Frozen; dumped with the fields that were set only (None included), wherever it is dumped:
    a plan crossing Redis or a journal keeps which keys its report writes."""

    model_config = FarmModel.model_config | {"frozen": True}

    @model_serializer(mode="wrap")
    def _set_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if k in self.model_fields_set}


class EnvelopeSection(_SetOnly):
    """A group of envelope fields written as keys of ``metadata`` (never a key of its own)."""

    KEYS: ClassVar[dict[str, str]] = {}
    """A field written under another key than its name."""

    @classmethod
    def written_keys(cls) -> dict[str, str]:
        """Field name → its key in ``metadata``."""
        return {name: cls.KEYS.get(name, name) for name in cls.model_fields}


class FleetFacts(EnvelopeSection):
    """What fleet control was asked for (SPEC 13; only what was asked for is set)."""

    adaptive: str | None = None
    """``--adaptive``: ``exact`` or ``sequential``."""
    adaptive_rule: str | None = None
    rate_limits: dict[str, str] | None = None
    """Key → its limit in the spec grammar (``600/m,8conc``)."""
    record: str | None = None
    """``--record DIR``."""
    replay: str | None = None
    """``--replay DIR``."""
    judge_cache: bool | None = None
    """False: ``--no-judge-cache``."""


class HistoryRecord(EnvelopeSection):
    """What the history keeps of the sweep (``farm.history.facts``) and who records it."""

    KEYS: ClassVar[dict[str, str]] = {"recorder": "history"}

    tags: dict[str, str] = Field(default_factory=dict)
    """``--tag KEY=VALUE``."""
    git: dict[str, JsonValue] | None = None
    suites: dict[str, JsonValue] = Field(default_factory=dict)
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    pass_k: list[int] = Field(default_factory=empty_list)
    """The k values of the pass@k and pass^k figures (``--pass-k``)."""
    recorder: Recorder | None = None
    """Written as ``metadata.history``; None: the report does not say."""
    journal: str | None = None
    """The run journal where ``farm test`` ran (``farm view`` renders the report from it)."""


class RetryBiasSummary(_SetOnly):
    """``metadata.retry_bias``: runs that needed a transient retry, over the sweep (``farm.stats.retry_bias``)."""

    cases: int
    """Cases with a retried run."""
    retried_runs: int
    flagged: list[str] = Field(default_factory=empty_list)
    """Cases that pass at a different rate when retried."""
    line: str
    """The sweep's one line for people."""


class BadLines(_SetOnly):
    """``metadata.journal_bad_lines``: lines of a run journal ``farm report`` could not read."""

    count: int
    first: str


_SECTIONS: dict[str, type[EnvelopeSection]] = {"fleet": FleetFacts, "history": HistoryRecord}


class SweepEnvelope(_SetOnly):
    """The sweep's identity and its typed sections; every field None (unset) when not known."""

    sweep_id: str | None = None
    agent_id: str | None = None
    """The agent's label (several agents: their labels joined)."""
    connector: str | None = None
    started_at: str | None = None
    version: str | None = None
    """The farm's version that ran the sweep."""
    comparison: str | None = None
    """``documented`` or ``neuro-san-compat``."""
    input: str | None = None
    """The suite file or directory (or ``-m``'s message)."""
    min_pass_rate: int | float | None = None
    """As given (``1`` stays ``1`` in the JSON, as before the envelope was typed)."""
    runs: int | None = None
    """``--runs`` as given (None: each case's own)."""
    reporter: str | None = None
    yao_compat: bool | None = None
    notes: list[str] | None = None
    """What reading the suite noted."""
    min_overall_pass_rate: int | float | None = None
    """``--min-overall-pass-rate``, 0–1."""
    fleet: FleetFacts | None = None
    quarantine: dict[str, dict[str, JsonValue]] | None = None
    """Case id → its ``farm-quarantine.toml`` entry (SPEC 18)."""
    otel: bool | None = None
    """``--otel`` of a distributed sweep: the worker that closes it exports it."""
    history: HistoryRecord | None = None
    completed_at: str | None = None
    retry_bias: RetryBiasSummary | None = None
    baseline: str | None = None
    """``--baseline REF``."""
    compared_with: dict[str, JsonValue] | None = None
    """The comparison with the baseline (SPEC 12's document)."""
    journal_bad_lines: BadLines | None = None
    """``farm report`` of a journal with unreadable lines."""
    hostname: str | None = None
    """The JUnit suites' ``hostname``, as a caller's ``metadata.hostname`` gives it (the farm sets none:
    JUnit then says ``localhost``)."""

    @property
    def recorder(self) -> Recorder | None:
        """Who records the sweep (``metadata.history``); None: the sweep says nothing."""
        return None if self.history is None else self.history.recorder

    @property
    def tags(self) -> dict[str, str]:
        return {} if self.history is None else self.history.tags

    @property
    def adaptive(self) -> bool:
        """An adaptive sweep (``metadata.adaptive``)."""
        return self.fleet is not None and bool(self.fleet.adaptive)

    def updated(self, **fields: Any) -> SweepEnvelope:
        """A copy with ``fields`` set (validated)."""
        return SweepEnvelope.model_validate({**self.model_dump(), **fields})

    def written(self, mode: Literal["json", "python"] = "json") -> dict[str, Any]:
        """The fields that were set, as keys of ``metadata`` (a section's fields flat)."""
        out: dict[str, Any] = {}
        for name, value in self.model_dump(mode=mode).items():
            section = _SECTIONS.get(name)
            if section is None:
                out[name] = value
            elif value is not None:
                keys = section.written_keys()
                out.update({keys[field]: item for field, item in value.items()})
        return out

    @classmethod
    def split(cls, written: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``metadata`` as written out → (the user's keys, the envelope's fields)."""
        taken: set[str] = set()
        fields: dict[str, Any] = {}
        for name in cls.model_fields:
            section = _SECTIONS.get(name)
            if section is None:
                if name in written:
                    fields[name] = written[name]
                    taken.add(name)
                continue
            part = {field: written[key] for field, key in section.written_keys().items() if key in written}
            if part:
                fields[name] = part
                taken.update(section.written_keys()[field] for field in part)
        return {k: v for k, v in written.items() if k not in taken}, fields


__all__ = [
    "BadLines", "EnvelopeSection", "FleetFacts", "HistoryRecord", "Recorder", "RetryBiasSummary", "SweepEnvelope",
]
