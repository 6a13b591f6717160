"""The farm's exceptions and exit codes.

Only ``farm.cli`` catches these and turns them into one line on stderr and an exit code.
Per-run failures are never exceptions: they are ``RunResult`` data (see ``farm.run.execute``).

    FarmError
     ├── InputError                  exit 2: bad input, nothing was run
     │    ├── SuiteError             a suite file (JSONL line / HOCON key) is wrong; holds every problem
     │    ├── AgentResolutionError   no agent could be found for a suite, or its manifest is wrong
     │    └── SettingsError          a flag, an environment variable or a config value is wrong
     └── FarmRuntimeError            exit 3: the farm itself failed while running
          ├── BrokerError            the broker / result backend is unreachable or lost
          ├── WorkerLostError        the worker pool went away and the sweep cannot finish
          └── ReporterError          a report could not be produced
    FleetStop                        fleet control stopped the sweep (``metadata.stopped``)
     ├── BudgetExhaustedError        exit 4: ``--budget`` / ``--max-tokens`` would be exceeded
     └── QuotaExhaustedError         exit 5: the provider's quota is used up

``AgentError`` stands apart: adapters raise it for one run; ``execute`` records it as a run
``error`` and the sweep goes on. Its ``kind`` (a ``FaultKind``, set where the fault is mapped:
``farm.agents.faults`` for the transport) is what the run's failure class is read from.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path


class ExitCode(enum.IntEnum):
    """Process exit codes of ``farm`` (SPEC 10; when several apply, the first in this order wins:
    2, 130/143, 3, 5, 4, 1, 0)."""

    #: every case met its requirement
    OK = 0
    #: at least one case did not meet its requirement
    CASES_FAILED = 1
    #: configuration or input error; nothing was run
    INPUT_ERROR = 2
    #: runtime error: broker unreachable, worker pool lost, crash, sweep failed, abandoned or cancelled
    RUNTIME_ERROR = 3
    #: stopped by ``--budget`` or ``--max-tokens`` (SPEC 10, 13)
    BUDGET = 4
    #: stopped because a provider's quota is exhausted (SPEC 10, 13)
    QUOTA = 5
    #: interrupted by Ctrl-C (SIGINT)
    INTERRUPTED = 130
    #: terminated by SIGTERM (what CI runners send on timeout)
    TERMINATED = 143


class FarmError(Exception):
    """Base of every error the farm raises on purpose."""

    exit_code: ExitCode = ExitCode.RUNTIME_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(FarmError):
    """Raised when input or configuration is wrong; nothing has been run."""

    exit_code = ExitCode.INPUT_ERROR


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a suite file, located as precisely as the format allows.

    Rendered as ``file:line: key: message``; ``line`` is 1-based and may be None (HOCON
    semantics errors have a key path only), ``key`` may be empty (a line that is not JSON).
    """

    path: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class SuiteError(InputError):
    """Raised when a suite file has problems; carries every problem found, not only the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def __reduce__(self) -> tuple[type[SuiteError], tuple[list[Problem]]]:
        return SuiteError, (self.problems,)  # pickled whole (a suite read by several processes)

    @classmethod
    def single(cls, path: str | Path, line: int | None, key: str, message: str) -> SuiteError:
        return cls([Problem(str(path), line, key, message)])


class AgentResolutionError(InputError):
    """Raised when no agent can be found for a suite, or its manifest or connector is wrong."""


class SettingsError(InputError):
    """Raised when a flag, environment variable or setting has a bad value."""


class FarmRuntimeError(FarmError):
    """Raised when the farm fails while running (not when a case fails)."""

    exit_code = ExitCode.RUNTIME_ERROR


class BrokerError(FarmRuntimeError):
    """Raised when the Celery broker or the result store cannot be reached."""


class WorkerLostError(FarmRuntimeError):
    """Raised when no worker is left to finish a sweep."""


class ReporterError(FarmRuntimeError):
    """Raised when a report cannot be rendered or written."""


class FleetStop(FarmError):
    """Raised when fleet control must stop the whole sweep; ``stopped`` is its report reason.

    Not a run failure: the executor stops scheduling runs, the call that raised it is not
    counted (its run is ``not_run``), and the report says ``metadata.stopped = stopped``.
    """

    stopped = ""


class BudgetExhaustedError(FleetStop):
    """Raised when a call's reservation would take the sweep past ``--budget`` or ``--max-tokens``."""

    exit_code = ExitCode.BUDGET
    stopped = "budget"


class QuotaExhaustedError(FleetStop):
    """Raised when a provider says its quota is used up: a 429 that keeps coming, or an
    "insufficient quota" answer. Retrying would only wait for hours."""

    exit_code = ExitCode.QUOTA
    stopped = "quota"


AGENT_BUILD_FAILED = "AgentBuildError"
"""``ErrorInfo.type`` of a run whose agent a worker could not build (a key or module missing on
that machine): the submitter ends the sweep as a configuration error (exit 2), showing the
worker's message, instead of reporting every run as a failed case."""


class FaultKind(enum.StrEnum):
    """What failed on the way to (or back from) the agent under test: the ``kind`` of an
    ``AgentError``, from which ``farm.models.failure_class`` reads the run's failure class (SPEC 14.2)."""

    #: refused, DNS failure, connect timeout, TLS failure, connection lost or cut midway
    CONNECT = "connect"
    #: the server answered HTTP 5xx, or said it failed
    SERVER = "5xx"
    #: HTTP 429 (rate limited), after the retries
    RATE_LIMIT = "429"
    #: the provider's quota is used up (an "insufficient quota" answer)
    QUOTA = "quota"
    #: no answer within the read timeout
    TIMEOUT = "timeout"
    #: HTTP 401, 403 or 407: the agent refused the farm's credentials (class ``harness:config``; with
    #: ``connect`` it makes a run that never reached the agent, SPEC 20)
    AUTH = "auth"
    #: an answer the farm cannot read (not JSON, no reply in it)
    PARSE = "parse"
    #: a request the test got wrong: a 4xx, a bad URL or header, an unknown agent, no recording
    CONFIG = "config"
    #: the agent itself failed: a non-zero exit, an answer that is an error
    CRASHED = "crashed"


class AgentError(Exception):
    """Raised by an agent adapter when one call to the agent under test fails.

    Never escapes ``execute``: it becomes a run with status ``error``. ``retries`` says how
    many transient faults were retried before giving up; ``kind`` what failed (None: the
    agent failed on its own, ``crashed``).
    """

    def __init__(self, message: str, *, retries: int = 0, kind: FaultKind | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retries = retries
        self.kind = kind
