"""``farm test --otel`` and ``--otel-runs``: the OpenTelemetry export of a sweep (``farm.reports.otel``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # farm test --help reads the flags alone
    from farm.sweep.observers import SweepObserver

__all__ = ["OtelFlags", "otel_flags"]


@dataclass(frozen=True)
class OtelFlags:
    """``--otel`` and ``--otel-runs`` as given."""

    otel: bool = False
    runs: bool = False

    @classmethod
    def from_flags(cls, flags: dict[str, Any]) -> OtelFlags:
        """Take (pop) the OpenTelemetry flags out of ``farm test``'s flags."""
        return cls(otel=bool(flags.pop("otel", False)), runs=bool(flags.pop("otel_runs", False)))

    def by_worker(self, broker: str | None) -> bool:
        """A distributed sweep with ``--otel``: the worker that closes it exports it (its endpoint
        is the worker's), told by the plan's envelope (``SweepEnvelope.otel``)."""
        return bool(broker) and self.otel

    def observers(self, broker: str | None, warn: Callable[[str], None]) -> list[SweepObserver]:
        """The exporter of an in-process sweep (none for a distributed one: see ``by_worker``)."""
        from farm.reports.otel import OtelObserver, check_extra

        if broker:
            return []
        return [OtelObserver(per_run=self.runs)] if check_extra(self.otel or self.runs, warn) else []


def otel_flags(command: Any) -> Any:
    """The OpenTelemetry flags of ``farm test``."""
    command = click.option("--otel-runs", is_flag=True,
                           help="With --otel (or an OTLP endpoint variable): also one farm.run span per run "
                                "(in-process sweeps).")(command)
    return click.option("--otel", is_flag=True,
                        help="Export the sweep as OpenTelemetry spans over OTLP/HTTP (farm.sweep, one farm.case "
                             "per case); on anyway when OTEL_EXPORTER_OTLP_ENDPOINT is set. Needs the otel extra.")(
        command)
