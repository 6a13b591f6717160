"""neuro-san HOCON suites: one file is one case, its ``interactions`` are the turns (SPEC 4.1).

The file is read with pyhocon, so comments, includes (relative to the file), substitutions,
``${?ENV}`` and unquoted or dotted keys all work. A syntax error names the parser's line;
a ``ConfigTree`` keeps no positions, so semantic errors name the key path instead
(``interactions[2].response.text``).

Unknown top-level keys are errors, except keys starting with ``_``: they hold shared
definitions for substitutions (``_shared { band = Beatles }`` … ``${_shared.band}``).

``connections`` the farm does not speak (``grpc``/``service``: neuro-san's gRPC service, which
neuro-san no longer serves) still make their case, skipped with a reason, so one such file never
fails a directory. ``mcp`` calls the agent as the server's MCP tool (``farm.agents.neuro_san_mcp``);
an ``mcp`` case that checks the sly_data the agent returns is skipped: MCP does not carry it.
In a directory sweep a file without ``interactions``
(neuro-san-studio's ``*.initial_memory.hocon``) is not a test case: it is skipped with a note.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from farm.checks.extract import json_type_name
from farm.checks.spec import Issue, parse_response, suggest
from farm.defaults import MAX_RUNS_PER_CASE
from farm.durations import parse_duration
from farm.errors import Problem
from farm.models import Assertion, Case, Message, SuccessRatio, Turn
from farm.suites.dynamic import LoadOptions
from farm.suites.hocon_guard import RemoteIncludeRefused, register_env_secrets, remote_includes, secrets_deferred

if TYPE_CHECKING:
    from pyparsing import ParseBaseException

__all__ = ["CONNECTIONS", "HOCON_KEYS", "INTERACTION_KEYS", "load_hocon", "parse_hocon_case", "read_hocon"]

HOCON_KEYS = ("agent", "connections", "success_ratio", "use_direct", "metadata", "timeout_in_seconds", "interactions")
"""Every top-level key of a neuro-san test case."""
INTERACTION_KEYS = ("text", "sly_data", "timeout_in_seconds", "chat_filter", "continue_conversation", "response")
CONNECTIONS = ("direct", "http", "https", "mcp")
_NO_GRPC = ("neuro-san dropped its gRPC service in 0.6.0 (0.5.68 was the last to serve it; its server now serves "
            "HTTP and MCP only): use http, https or mcp")
UNSPOKEN_CONNECTIONS = {
    "grpc": f"neuro-san's gRPC service: {_NO_GRPC}",
    "service": f"neuro-san's gRPC service ('service' was its other name): {_NO_GRPC}",
}
"""Connections neuro-san knows and the farm does not run, with why."""
CHAT_FILTERS = ("MINIMAL", "MAXIMAL")
MCP_NO_SLY_DATA = ("connection 'mcp' cannot check the sly_data the agent returns: neuro-san's MCP tool result "
                   "carries text, structure and chat_context only (neuro-san 0.6.98, 0.7.15); use http or https")

_LINE_IN_TEXT = re.compile(r"line:\s*(\d+)")
_RATIO = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def load_hocon(
    path: Path, case_id: str, suite: str, notes: list[str] | None = None, options: LoadOptions | None = None
) -> tuple[list[Case], list[Problem]]:
    """Read one HOCON test case: one ``Case``, or one per entry of a ``connections`` list.

    With ``notes`` (a directory sweep), a file that is not a test case adds a note instead of a problem.
    With ``options.foreign_agent`` (``-n`` names an agent that is not a neuro-san server) the
    connections do not apply: one case, run once, with a note saying so.
    ``options.allow_remote_includes``: ``--allow-remote-includes`` (``farm.suites.hocon_guard``).
    """
    deferred: set[str] = set()
    data, problem = read_hocon(path, allow_remote=options is not None and options.allow_remote_includes,
                               deferred=deferred)
    if problem is not None:
        return [], [problem]
    if notes is not None and "interactions" not in data:
        notes.append(f"{path}: skipped: not a test case (no interactions)")
        return [], []
    cases, issues = parse_hocon_case(data, case_id, str(path.parent.resolve()))
    if issues:
        return [], [Problem(str(path), None, key, message) for key, message in issues]
    if options is not None and options.foreign_agent and "connections" in data:
        cases = [_once(cases, case_id, options.foreign_agent)]
    update: dict[str, Any] = {"source": str(path), "suite": suite, "env_refs": sorted(deferred) or None}
    return [c.model_copy(update=update) for c in cases], []


def _once(cases: list[Case], case_id: str, agent: str) -> Case:
    """The one case a file's connections make when ``-n`` names an agent that is no neuro-san server."""
    names = ", ".join(str(c.connection) for c in cases)
    note = f"connections ({names}) do not apply to -n {agent} (not a neuro-san server): run once"
    return cases[0].model_copy(update={"id": case_id, "connection": None, "skip": False, "skip_reason": None,
                                       "load_note": note})


def read_hocon(path: Path, *, allow_remote: bool = False,
               deferred: set[str] | None = None) -> tuple[dict[str, Any], Problem | None]:
    """Parse the file into plain dicts, or say where it is broken (an include of a URL is, unless
    ``allow_remote``). With ``deferred``, substitutions of secret-named environment variables stay
    ``${?NAME}`` and their names are added to it (``farm.suites.hocon_guard.secrets_deferred``)."""
    where = str(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        return {}, Problem(where, None, "", f"cannot read: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        return {}, Problem(where, None, "", f"not UTF-8 text (byte {exc.start + 1})")
    # imported here, where it is used: pyhocon and pyparsing cost ~0.1 s, and most suites are JSONL
    from pyhocon import ConfigFactory, ConfigTree
    from pyparsing import ParseBaseException

    register_env_secrets(text)
    try:
        with remote_includes(allow_remote), secrets_deferred(deferred if deferred is not None else set()):
            tree = ConfigFactory.parse_string(text, basedir=str(path.parent))
    except RemoteIncludeRefused as exc:
        return {}, Problem(where, None, "", f"include of {exc.url}: a remote include is fetched at load time; "
                                            "refused (give --allow-remote-includes to allow it)")
    except ParseBaseException as exc:
        return {}, Problem(where, exc.lineno, "", _syntax_message(exc))
    except RecursionError:
        return {}, Problem(where, None, "", "HOCON nested too deeply")
    except Exception as exc:  # pyhocon raises many types (substitutions, concatenation, …)
        return {}, Problem(where, _line_from_text(str(exc)), "", f"HOCON error: {_short(str(exc))}")
    try:
        data = plain(tree)
    except RecursionError:
        return {}, Problem(where, None, "", "HOCON nested too deeply")
    if not isinstance(tree, ConfigTree):
        return {}, Problem(where, None, "", f"a test case must be an object, got {json_type_name(data)}")
    return data, None


def _syntax_message(exc: ParseBaseException) -> str:
    # pyparsing's "Expected …" can print its whole grammar: keep only short explanations.
    found = getattr(exc, "found", None) or "unexpected input"
    detail = exc.msg if len(exc.msg) <= 80 else f"unexpected {found}"
    return f"HOCON syntax error (column {exc.col}): {detail}"


def _line_from_text(text: str) -> int | None:
    match = _LINE_IN_TEXT.search(text)
    return int(match.group(1)) if match else None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(value: Any) -> Any:
    """A pyhocon value as plain JSON data (quoted keys unquoted, str subclasses as str)."""
    if isinstance(value, dict):
        return {_unquote(str(k)): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)  # e.g. a pyhocon period; shown to the user as text


def _unquote(key: str) -> str:
    if len(key) >= 2 and key[0] == key[-1] == '"':
        try:
            return str(json.loads(key))
        except ValueError:
            return key[1:-1]
    return key


def parse_hocon_case(data: dict[str, Any], case_id: str, base_dir: str = "") -> tuple[list[Case], list[Issue]]:
    """Validate a parsed test case into its cases (several with a ``connections`` list)."""
    # Keys starting with "_" hold definitions for substitutions (${_shared.band}); any other
    # unknown key is a typo that would otherwise silently change nothing.
    issues: list[Issue] = [
        (str(k), f"unknown key (expected one of: {', '.join(HOCON_KEYS)}){suggest(k, HOCON_KEYS)}")
        for k in data
        if k not in HOCON_KEYS and not str(k).startswith("_")
    ]
    fields = _top_fields(data, issues)
    connections = _connections(data.get("connections"), issues)
    turns = _turns(data.get("interactions"), issues)
    if issues:
        return [], issues
    texts = [t.messages[0].content if t.messages else None for t in turns]
    cases = []
    for connection in connections:
        suffix = f"@{connection}" if connection and isinstance(data.get("connections"), list) else ""
        unspoken = UNSPOKEN_CONNECTIONS.get(connection or "")
        skip = {"skip": True, "skip_reason": f"connection {connection!r} is not spoken: {unspoken}"} if unspoken else {}
        if connection == "mcp" and any(t.target == "sly_data" for turn in turns for t in turn.stock_tests):
            skip = {"skip": True, "skip_reason": MCP_NO_SLY_DATA}
        try:
            cases.append(
                Case(id=f"{case_id}{suffix}", format="neuro-san", base_dir=base_dir, turns=turns,
                     input=texts[0] if len(texts) == 1 else texts, connection=connection, **fields, **skip)  # type: ignore[arg-type]
            )  # fmt: skip
        except ValidationError as exc:
            return [], [("", str(exc.errors()[0].get("msg", "invalid")))]
    return cases, []


def _top_fields(data: dict[str, Any], issues: list[Issue]) -> dict[str, Any]:
    agent = data.get("agent")
    if agent is not None and (not isinstance(agent, str) or not agent.strip()):
        issues.append(("agent", f"must be a non-empty string, got {json_type_name(agent)}"))
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        issues.append(("metadata", f"must be an object, got {json_type_name(metadata)}"))
    if "use_direct" in data and not isinstance(data["use_direct"], bool):
        issues.append(("use_direct", f"must be true or false, got {json_type_name(data['use_direct'])}"))
    return {
        "agent": agent,
        "metadata": metadata,
        "test_timeout_s": _seconds(data.get("timeout_in_seconds"), "timeout_in_seconds", issues),
        "success_ratio": _success_ratio(data.get("success_ratio"), issues),
    }


def _seconds(value: Any, key: str, issues: list[Issue]) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        issues.append((key, str(exc)))
        return None


def _success_ratio(value: Any, issues: list[Issue]) -> SuccessRatio | None:
    if value is None:
        return None
    match = _RATIO.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        issues.append(("success_ratio", f'must be "k/n" with integers k and n, got {value!r}'))
        return None
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1 or k > n:
        issues.append(("success_ratio", f"needs 0 <= k <= n and n >= 1, got {k}/{n}"))
        return None
    if n > MAX_RUNS_PER_CASE:
        issues.append(("success_ratio", f"{k}/{n} plans {n:,} runs: at most {MAX_RUNS_PER_CASE:,} runs of a case"))
        return None
    return SuccessRatio(k=k, n=n)


def _connections(value: Any, issues: list[Issue]) -> list[str | None]:
    if value is None:
        return [None]
    items = value if isinstance(value, list) else [value]
    if not items:
        issues.append(("connections", "an empty list: nothing to connect with"))
    found: list[str | None] = []
    for n, item in enumerate(items):
        key = f"connections[{n}]" if isinstance(value, list) else "connections"
        name = item.lower() if isinstance(item, str) else None
        if name not in CONNECTIONS and name not in UNSPOKEN_CONNECTIONS:  # a non-string is None here
            known = ", ".join((*CONNECTIONS, *UNSPOKEN_CONNECTIONS))
            issues.append((key, f"unknown connection {item!r} (expected one of: {known})"))
        elif name in found:
            issues.append((key, f"{name!r} is listed twice"))
        else:
            found.append(name)
    return found


def _turns(value: Any, issues: list[Issue]) -> list[Turn]:
    if value is None:
        issues.append(("interactions", "missing: a test case needs at least one interaction"))
        return []
    if not isinstance(value, list) or not value:
        issues.append(("interactions", f"must be a non-empty list of objects, got {_describe(value)}"))
        return []
    turns = []
    for n, item in enumerate(value):
        turn = _turn(item, f"interactions[{n}]", issues)
        if turn is not None:
            turns.append(turn)
    return turns


def _describe(value: Any) -> str:
    return "an empty list" if value == [] else json_type_name(value)


def _turn(item: Any, where: str, issues: list[Issue]) -> Turn | None:
    if not isinstance(item, dict):
        issues.append((where, f"an interaction must be an object, got {json_type_name(item)}"))
        return None
    before = len(issues)
    issues += [
        (f"{where}.{k}", f"unknown key (expected one of: {', '.join(INTERACTION_KEYS)}){suggest(k, INTERACTION_KEYS)}")
        for k in item
        if k not in INTERACTION_KEYS
    ]
    text = item.get("text")
    if text is not None and not isinstance(text, str):
        issues.append((f"{where}.text", f"must be a string, got {json_type_name(text)}"))
    sly_data = item.get("sly_data")
    if sly_data is not None and not isinstance(sly_data, dict):
        issues.append((f"{where}.sly_data", f"must be an object, got {json_type_name(sly_data)}"))
    keep_going = item.get("continue_conversation", True)
    if not isinstance(keep_going, bool):
        issues.append((f"{where}.continue_conversation", f"must be true or false, got {json_type_name(keep_going)}"))
    timeout = _seconds(item.get("timeout_in_seconds"), f"{where}.timeout_in_seconds", issues)
    chat_filter = _chat_filter(item.get("chat_filter"), f"{where}.chat_filter", issues)
    tool_checks: list[Assertion] = []
    tests, found = parse_response(item.get("response"), f"{where}.response", tool_checks)
    issues += found
    if len(issues) > before:
        return None
    messages = [Message(role="user", content=text)] if isinstance(text, str) else []
    return Turn(messages=messages, sly_data=sly_data, timeout_s=timeout, chat_filter=chat_filter,
                continue_conversation=keep_going, stock_tests=tests, assertions=tool_checks)  # fmt: skip


def _chat_filter(value: Any, key: str, issues: list[Issue]) -> Any:
    if isinstance(value, dict):  # the wire form {chat_filter_type: ...} is accepted too
        value = value.get("chat_filter_type")
    if value is None:
        return None
    name = value.upper() if isinstance(value, str) else value
    if name not in CHAT_FILTERS:
        issues.append((key, f"must be MINIMAL or MAXIMAL, got {value!r}"))
        return None
    return name
