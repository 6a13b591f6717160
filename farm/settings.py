"""The farm's settings, resolved once: named defaults < ``FARM_*`` environment < command-line flags.

arq's ``RedisSettings`` shape: one frozen object built at the edge (the CLI, a worker's start-up)
and passed down explicitly, so no code below reads the environment on every call and the queue
name, timeouts and Redis URLs are written once. A bad value is a ``SettingsError`` (exit 2)
naming the variable.

    FARM_BROKER_URL          broker: redis://, rediss://, unix:// or amqp:// (RabbitMQ)
    FARM_RESULT_BACKEND      Celery result backend (default: the broker)
    FARM_STORE_URL           Redis holding the farm's sweep data (default: the broker when it is Redis;
                             required with amqp://)
    FARM_QUEUE               queue of submitters and workers (default ``farm``)
    FARM_VISIBILITY_TIMEOUT  seconds before an unacknowledged run is delivered again (default 360)
    FARM_RESULT_TTL          seconds results and reports stay retrievable (default 7 days)
    FARM_NO_WORKER_TIMEOUT   seconds a submitter waits for a consumer before detaching (default 120)
    FARM_RECONNECT_TIMEOUT   seconds a lost broker may take to come back (default 60)
    FARM_STALL_TIMEOUT       seconds without progress before a submitter detaches (default: derived)
    FARM_TASK_EVENTS         1: workers send Celery task events from the start (Flower)
    FARM_DATA_DIR            journals, history, recordings (default ~/.local/share/agent-farm)
    FARM_JOURNAL_DAYS        days run journals are kept (default 7)
    FARM_STOP_GRACE          seconds runs in flight may finish after Ctrl-C/SIGTERM (default 5)
    FARM_SEMANTIC            0: no semantic figures (as ``farm test --no-semantic``); default 1
    FARM_SEMANTIC_CACHE      embeddings kept per process, by text (default 10000; 0: none kept)
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from farm.errors import SettingsError

DEFAULT_BROKER_URL = "redis://localhost:6379/0"
"""Where workers and submitters look for the broker when nothing is set."""
DEFAULT_QUEUE = "farm"
"""The Celery queue of ``farm.run`` and friends."""
SWEEP_QUEUE_PREFIX = "farm.sweep."
"""A sweep's own queue (``farm test --own-queue``, ``farm worker --sweep ID``) is this plus its id."""
SWEEP_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""What a sweep id may be when it names a queue: a Redis key, an AMQP queue name (at most 255
bytes, never ``amq.``), a ``-Q`` item (no comma) and kombu's binding entries (no control bytes)
all accept it; ``new_sweep_id``'s ``20261122T101500-3f2a9c`` is one."""
DEFAULT_CASE_TIMEOUT_S = 300.0
"""A run's whole time budget when neither the case nor ``--timeout`` sets one (Yao: 5m)."""
DEFAULT_VISIBILITY_TIMEOUT_S = int(DEFAULT_CASE_TIMEOUT_S) + 60
"""The default case timeout plus a minute (SPEC 9): a dead worker's runs come back by then."""
DEFAULT_RESULT_TTL_S = 7 * 24 * 3600
"""How long a sweep's results and report stay retrievable (SPEC 9: 7 days)."""
DEFAULT_NO_WORKER_TIMEOUT_S = 120.0
"""A submitter whose queue nobody consumed for this long detaches (the sweep stays queued)."""
DEFAULT_RECONNECT_TIMEOUT_S = 60.0
"""How long a lost broker connection may take to come back."""
DEFAULT_JOURNAL_DAYS = 7
"""Run journals older than this are pruned when a sweep starts (SPEC 10)."""
DEFAULT_STOP_GRACE_S = 5.0
"""After Ctrl-C or SIGTERM, runs in flight get this long to finish before they are abandoned."""
DEFAULT_SEMANTIC_CACHE = 10_000
"""Embeddings of answers kept per process (``farm.semantic.cache``): about 18 MB when full, and
enough for the distinct answers of a large suite, so answers repeated across cases (and across
the sweeps a worker runs) are embedded once."""
DEFAULT_DATA_DIR = Path("~/.local/share/agent-farm")
"""Journals, the SQLite history and recordings live here unless FARM_DATA_DIR says otherwise."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _positive(env: Mapping[str, str], name: str, default: float, *, whole: bool) -> Any:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value: float = int(raw) if whole else float(raw)
    except ValueError:
        kind = "a whole number of seconds" if whole else "a number of seconds"
        raise SettingsError(f"{name}={raw!r}: expected {kind}") from None
    if value <= 0:
        raise SettingsError(f"{name}={raw!r}: must be positive")
    return value


def whole_number_env(name: str, *, counting: str, env: Mapping[str, str] | None = None) -> int | None:
    """``name`` in the environment as a whole number ≥ 1; None when unset or blank. Anything
    else is bad input (SettingsError, exit 2): ``NAME='x': expected a whole number of COUNTING``."""
    env = os.environ if env is None else env
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise SettingsError(f"{name}={raw!r}: expected a whole number of {counting}, at least 1")
    return value


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The farm's data directory: ``FARM_DATA_DIR``, else ``~/.local/share/agent-farm`` (SPEC 10)."""
    env = os.environ if env is None else env
    return Path(env.get("FARM_DATA_DIR") or DEFAULT_DATA_DIR).expanduser()


def semantic_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``FARM_SEMANTIC``: False when set to 0/false/no/off (the semantic figures are not computed:
    SPEC 16, 26), True when unset, blank or 1/true/yes/on; anything else is a SettingsError."""
    env = os.environ if env is None else env
    raw = env.get("FARM_SEMANTIC", "").strip()
    if not raw or raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise SettingsError(f"FARM_SEMANTIC={raw!r}: expected 1 (semantic figures computed) or 0 (turned off)")


def semantic_cache_entries(env: Mapping[str, str] | None = None) -> int:
    """``FARM_SEMANTIC_CACHE``: embeddings kept per process (default ``DEFAULT_SEMANTIC_CACHE``;
    0 keeps none); anything but a whole number ≥ 0 is a SettingsError."""
    env = os.environ if env is None else env
    raw = env.get("FARM_SEMANTIC_CACHE", "").strip()
    if not raw:
        return DEFAULT_SEMANTIC_CACHE
    if not (raw.isascii() and raw.isdigit()):
        raise SettingsError(f"FARM_SEMANTIC_CACHE={raw!r}: expected a whole number of embeddings kept, 0 or more")
    return int(raw)


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
"""URLs of a Redis server: plain, TLS and a Unix socket. A TLS URL names its certificate check:
``rediss://host:6380/0?ssl_cert_reqs=required&ssl_ca_certs=/path/ca.pem`` (kombu, Celery's
result backend and redis-py all read these two query parameters)."""
AMQP_SCHEMES = ("amqp://", "amqps://", "pyamqp://")
"""URLs of a RabbitMQ broker (AMQP 0-9-1): the farm's store then lives in FARM_STORE_URL."""


def is_redis_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(REDIS_SCHEMES)


def is_amqp_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(AMQP_SCHEMES)


@dataclass(frozen=True)
class FarmSettings:
    """Every environment-level setting of the farm (flags override through ``replace``)."""

    broker_url: str = DEFAULT_BROKER_URL
    result_backend: str | None = None
    store: str | None = None
    """FARM_STORE_URL as given; ``store_url`` is the one in use."""
    queue: str = DEFAULT_QUEUE
    visibility_timeout_s: int = DEFAULT_VISIBILITY_TIMEOUT_S
    result_ttl_s: int = DEFAULT_RESULT_TTL_S
    no_worker_timeout_s: float = DEFAULT_NO_WORKER_TIMEOUT_S
    reconnect_timeout_s: float = DEFAULT_RECONNECT_TIMEOUT_S
    stall_timeout_s: float | None = None
    """None: the longest case timeout plus the visibility timeout plus a grace."""
    task_events: bool = False
    data_dir: Path = DEFAULT_DATA_DIR
    journal_days: int = DEFAULT_JOURNAL_DAYS
    stop_grace_s: float = DEFAULT_STOP_GRACE_S
    semantic: bool = True
    """FARM_SEMANTIC: a sweep submitted from here computes semantic figures (``--no-semantic``: no)."""
    semantic_cache: int = DEFAULT_SEMANTIC_CACHE
    """FARM_SEMANTIC_CACHE: embeddings kept in each process (read where the figures are computed)."""

    def __post_init__(self) -> None:
        if not (is_redis_url(self.broker_url) or is_amqp_url(self.broker_url)):
            raise SettingsError(f"broker {safe_url(self.broker_url)}: expected redis://, rediss://, unix:// or "
                                "amqp:// (RabbitMQ) (FARM_BROKER_URL or --broker)")
        for name, url in (("broker", self.broker_url), ("FARM_STORE_URL", self.store),
                          ("FARM_RESULT_BACKEND", self.result_backend)):
            _check_host_and_port(name, url)
            if url and url.startswith("rediss://") and "ssl_cert_reqs=" not in url:
                raise SettingsError(f"{name} {safe_url(url)}: a rediss:// URL must say how to check the server's "
                                    "certificate: add ?ssl_cert_reqs=required&ssl_ca_certs=/path/to/ca.pem "
                                    "(ssl_cert_reqs=none skips the check: encrypted, but anyone can pose as Redis)")
        if self.store and not is_redis_url(self.store):
            raise SettingsError(f"FARM_STORE_URL={safe_url(self.store)}: the farm's store is Redis "
                                "(redis://, rediss:// or unix://)")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> FarmSettings:
        """Defaults, then FARM_* variables, then ``overrides`` (None means 'not given')."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "broker_url": env.get("FARM_BROKER_URL") or DEFAULT_BROKER_URL,
            "result_backend": env.get("FARM_RESULT_BACKEND") or None,
            "store": env.get("FARM_STORE_URL") or None,
            "queue": env.get("FARM_QUEUE") or DEFAULT_QUEUE,
            "visibility_timeout_s": _positive(env, "FARM_VISIBILITY_TIMEOUT", DEFAULT_VISIBILITY_TIMEOUT_S,
                                              whole=True),
            "result_ttl_s": _positive(env, "FARM_RESULT_TTL", DEFAULT_RESULT_TTL_S, whole=True),
            "no_worker_timeout_s": _positive(env, "FARM_NO_WORKER_TIMEOUT", DEFAULT_NO_WORKER_TIMEOUT_S, whole=False),
            "reconnect_timeout_s": _positive(env, "FARM_RECONNECT_TIMEOUT", DEFAULT_RECONNECT_TIMEOUT_S, whole=False),
            "stall_timeout_s": _positive(env, "FARM_STALL_TIMEOUT", 0.0, whole=False) or None,
            "task_events": env.get("FARM_TASK_EVENTS", "").strip().lower() in _TRUE,
            "data_dir": data_dir(env),
            "journal_days": _positive(env, "FARM_JOURNAL_DAYS", DEFAULT_JOURNAL_DAYS, whole=True),
            "stop_grace_s": _positive(env, "FARM_STOP_GRACE", DEFAULT_STOP_GRACE_S, whole=False),
            "semantic": semantic_enabled(env),
            "semantic_cache": semantic_cache_entries(env),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def replace(self, **changes: Any) -> FarmSettings:
        """A copy with ``changes`` applied (None values are ignored: 'flag not given')."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def store_url(self) -> str:
        """Where the farm keeps sweep data: FARM_STORE_URL, else a Redis result backend, else the broker."""
        if self.store:
            return self.store
        if is_redis_url(self.result_backend):
            return str(self.result_backend)
        if is_redis_url(self.broker_url):
            return self.broker_url
        raise SettingsError(f"broker {safe_url(self.broker_url)} is not Redis: set FARM_STORE_URL to the Redis "
                            "server that holds the farm's sweep data (redis://…); RabbitMQ carries only the "
                            "messages")


def _check_host_and_port(name: str, url: str | None) -> None:
    """SettingsError for a URL whose port or host cannot be read (``:99999``, ``[::1``), before a client
    library fails on it with a traceback."""
    if not url:
        return
    try:
        urlsplit(url).port  # noqa: B018 - reading it is the check (a port out of range raises)
    except ValueError as exc:
        raise SettingsError(f"{name} {safe_url(url)}: {exc}") from None


def sweep_queue(sweep_id: str) -> str:
    """The queue of a sweep published on its own (``farm.sweep.{id}``); a ValueError for an id that
    cannot name one (``SWEEP_ID_PATTERN``)."""
    if not SWEEP_ID_PATTERN.fullmatch(sweep_id):
        raise ValueError(f"{sweep_id!r} is not a sweep id (letters, digits, '.', '_', '-'; at most 200)")
    return SWEEP_QUEUE_PREFIX + sweep_id


def url_credentials(url: str) -> tuple[str, str, str, str] | None:
    """``(scheme://, user, password, host and the rest)`` of a URL that carries credentials, else
    None. The credentials end at the last ``@`` before the host; a password may hold an unencoded
    ``/``, ``?`` or ``#`` (``redis://:pa/ss@h/0``): then the ``@`` is past the first of them, and it
    is taken as the credentials' end unless what precedes is a plain ``host:port``."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return None
    authority = rest[:min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))]
    if "@" not in authority:  # an ``@`` only past the authority: credentials, or a path's or query's
        head, colon, port = authority.partition(":")
        if not colon or (head and port.isdigit()):
            return None  # no password can hide there (no ':' but a host's port)
        found = _CREDENTIALS_AT.match(rest)
        if found is None:
            return None
        creds, host = found.group(1), found.group(2)
    else:
        creds, _, host = authority.rpartition("@")
        host += rest[len(authority):]
    user, _, password = creds.partition(":")
    return scheme + sep, user, password, host


_CREDENTIALS_AT = re.compile(r"(.*)@([^@/?#]*(?:[/?#].*)?)\Z", re.DOTALL)
"""The last ``@`` after which the host has no ``@``: what precedes is the credentials."""


def safe_url(url: str) -> str:
    """``url`` without its password, for messages, logs, reports and spans (the one place that
    hides a URL's credentials: a broker's, an agent's ``-n http://user:PASSWORD@host/``)."""
    parts = url_credentials(url)
    if parts is None:
        return url
    scheme, user, _, host = parts
    return f"{scheme}{user + ':***' if user else ':***'}@{host}"


__all__ = [
    "AMQP_SCHEMES",
    "DEFAULT_BROKER_URL",
    "DEFAULT_CASE_TIMEOUT_S",
    "DEFAULT_QUEUE",
    "DEFAULT_RESULT_TTL_S",
    "DEFAULT_SEMANTIC_CACHE",
    "DEFAULT_STOP_GRACE_S",
    "DEFAULT_VISIBILITY_TIMEOUT_S",
    "REDIS_SCHEMES",
    "SWEEP_ID_PATTERN",
    "SWEEP_QUEUE_PREFIX",
    "FarmSettings",
    "data_dir",
    "is_amqp_url",
    "is_redis_url",
    "safe_url",
    "semantic_cache_entries",
    "semantic_enabled",
    "sweep_queue",
    "url_credentials",
]
