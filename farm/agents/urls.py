"""The one grammar of neuro-san addresses: ``-n neuro-san://host[:port]/agent`` and server URLs.

neuro-san serves HTTP on port 8080 by default (SPEC Appendix A), so an address without a port
means 8080 when it says ``neuro-san://`` or no scheme at all; an ``http://``/``https://`` URL
keeps HTTP's own default port, as any URL does.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from farm.errors import AgentResolutionError

SCHEME = "neuro-san://"
DEFAULT_PORT = 8080
"""neuro-san's HTTP port, used when an address names none."""
REFERENCE_SHAPE = "neuro-san://host:port/agent"


def parse_neuro_san_url(ref: str) -> tuple[str, str]:
    """``neuro-san://host[:port]/agent`` → (``http://host:port``, ``agent``); the agent may hold ``/``.

    Raises:
        AgentResolutionError: not that shape (no host, or no agent).
    """
    if not ref.startswith(SCHEME):
        raise AgentResolutionError(f"agent {ref!r}: expected {REFERENCE_SHAPE}")
    netloc, _, agent = ref[len(SCHEME) :].partition("/")
    agent = agent.strip("/")
    if not netloc or not agent:
        raise AgentResolutionError(f"agent {ref!r}: expected {REFERENCE_SHAPE}")
    split_url(f"http://{netloc}", f"agent {ref!r}")  # a host or port that does not parse, named as given
    return neuro_san_server(SCHEME + netloc), agent


def neuro_san_server(server: str) -> str:
    """A server URL without trailing slash: ``host[:port]`` and ``neuro-san://host[:port]`` mean
    ``http://host:port`` (port 8080 when none); ``http(s)://`` URLs are kept as they are.

    Raises:
        AgentResolutionError: a scheme other than http, https or neuro-san, or no host.
    """
    server = server.strip().rstrip("/")
    if server.startswith(SCHEME) or "://" not in server:
        netloc, slash, path = server.removeprefix(SCHEME).partition("/")
        port = "" if _has_port(netloc) else f":{DEFAULT_PORT}"
        server = f"http://{netloc}{port}{slash}{path}"
    parts = split_url(server, f"neuro-san server {server!r}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AgentResolutionError(f"neuro-san server {server!r}: expected http://host:port or https://host:port")
    return server


def split_url(url: str, what: str) -> SplitResult:
    """``urlsplit``, its port read: a URL that does not parse (an unclosed IPv6 bracket, a port
    out of range or not a number) is bad input naming ``what``, not a traceback."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- urllib checks the port only when it is read
    except ValueError as exc:
        raise AgentResolutionError(f"{what}: {exc}") from None
    return parts


def _has_port(netloc: str) -> bool:
    return ":" in netloc.rsplit("@", 1)[-1].rsplit("]", 1)[-1]  # an IPv6 host is in brackets: [::1]:8080
