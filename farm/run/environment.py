"""The sweep-wide settings every run is played under (``RunEnvironment``) and what they make of a run's
identity: the user, team and chat id agents see in their ``AgentContext`` (Yao's order of precedence),
and the sweep's own context given to ``--before``/``--after`` hooks. ``farm.run.execute`` plays the runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from farm.agents.base import AgentContext
from farm.models import Case, JsonValue
from farm.settings import DEFAULT_CASE_TIMEOUT_S


@dataclass(frozen=True)
class RunEnvironment:
    """Sweep-wide settings that shape every run (JSON-able: workers rebuild it)."""

    user: str | None = None
    """``-u``: wins over the case's ``user``."""
    team: str | None = None
    connector: str | None = None
    timeout_s: float | None = None
    """``--timeout``: default whole-run timeout for cases that set none."""
    neuro_san_compat: bool = False
    confirm_failures: int = 1
    """``--confirm-failures k``: a judged check that fails is judged k times, the majority stands."""
    yao_compat: bool = False
    """``--yao-compat``: dynamic cases behave as Yao's code does where its documentation disagrees."""
    sweep_id: str | None = None
    locale: str = "en-us"
    client_type: str = "test"
    client_ip: str = "127.0.0.1"
    referer: str = "test"
    accept: str = "standard"
    chat_id: str | None = None
    """``--ctx`` ``chat_id``: run 1's chat id, ``<chat_id>-run<n>`` for the others (Yao's rule)."""
    authorized: dict[str, JsonValue] | None = None
    """``--ctx`` ``authorized`` (user, team, constraints…), given to agents as ``context.authorized``."""
    metadata: dict[str, JsonValue] | None = None
    """``--ctx`` ``metadata``, under each case's own ``metadata``."""

    def case_timeout(self, case: Case) -> float:
        return case.timeout_s or self.timeout_s or DEFAULT_CASE_TIMEOUT_S

    def describe(self) -> dict[str, JsonValue]:
        """The environment section of reports."""
        return {
            "user_id": self.user or "test-user",
            "team_id": self.team or "test-team",
            "locale": self.locale,
            "client_type": self.client_type,
            "client_ip": self.client_ip,
            "referer": self.referer,
            "accept": self.accept,
            "connector": self.connector,
        }


def _granted(env: RunEnvironment, key: str) -> str | None:
    """A string of the ``--ctx`` ``authorized`` block (flags and the case's own fields win over it)."""
    value = (env.authorized or {}).get(key)
    return value if isinstance(value, str) and value else None


def _identity(env: RunEnvironment, user: str | None, team: str | None) -> tuple[str, str]:
    """User and team: the flags, else the case's, else ``--ctx``'s, else the defaults (Yao's order)."""
    if env.authorized is None:  # the common case, on every turn: no look-ups
        return env.user or user or "test-user", env.team or team or "test-team"
    return (env.user or user or _granted(env, "user_id") or "test-user",
            env.team or team or _granted(env, "team_id") or _granted(env, "tenant_id") or "test-team")


def first_chat_id(env: RunEnvironment, run: int) -> str | None:
    if env.chat_id is None:
        return None
    return env.chat_id if run == 1 else f"{env.chat_id}-run{run}"


def turn_context(case: Case, run: int, env: RunEnvironment, chat_id: str, sly: dict[str, JsonValue] | None,
             turn: int) -> AgentContext:
    user_id, team_id = _identity(env, case.user, case.team)
    return AgentContext(
        user_id=user_id, team_id=team_id, locale=env.locale, client_type=env.client_type,
        client_ip=env.client_ip, referer=env.referer, accept=env.accept, case_id=case.id, run=run, turn=turn,
        chat_id=chat_id,
        metadata=case.metadata if env.metadata is None else {**env.metadata, **(case.metadata or {})},
        sly_data=sly, connector=env.connector, authorized=env.authorized,
        options={**(case.options or {}), **case.arm_options} if case.arm_options else case.options,
    )


def sweep_context(env: RunEnvironment) -> AgentContext:
    """The test environment of the sweep as a whole (given to ``--before``/``--after`` hooks)."""
    user_id, team_id = _identity(env, None, None)
    return AgentContext(
        user_id=user_id, team_id=team_id,
        locale=env.locale, client_type=env.client_type, client_ip=env.client_ip, referer=env.referer,
        accept=env.accept, chat_id=env.chat_id or env.sweep_id or "", metadata=env.metadata,
        connector=env.connector, authorized=env.authorized,
    )
