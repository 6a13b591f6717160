"""Secrets are masked in text, JSON values, headers and replies; $ENV values register themselves."""

from __future__ import annotations

import pytest

from farm.agents.secrets import (
    MASK,
    expand_env,
    redact,
    redact_headers,
    redact_reply,
    redact_value,
    register_secret,
)
from farm.errors import AgentResolutionError
from farm.models import Reply, ToolCall


def test_registered_values_are_masked_everywhere_in_text() -> None:
    register_secret("sk-secret-one-123")
    assert redact("key sk-secret-one-123 and again sk-secret-one-123.") == f"key {MASK} and again {MASK}."
    assert redact("nothing here") == "nothing here"


def test_longer_secrets_are_masked_first() -> None:
    register_secret("tok-abcd")
    register_secret("tok-abcd-efgh-long")
    assert redact("x tok-abcd-efgh-long y") == f"x {MASK} y"


def test_short_and_empty_values_are_not_registered() -> None:
    register_secret("ab")
    register_secret("")
    register_secret(None)
    assert redact("a cab b") == "a cab b"


def test_json_values_are_masked_recursively_keys_included() -> None:
    register_secret("sk-nested-secret")
    value = {"a": ["x sk-nested-secret", 1, None], "sk-nested-secret": {"b": "sk-nested-secret"}, "n": 2.5}
    assert redact_value(value) == {"a": [f"x {MASK}", 1, None], MASK: {"b": MASK}, "n": 2.5}


def test_sensitive_headers_are_masked_even_when_unregistered() -> None:
    register_secret("sk-header-secret")
    headers = {"Authorization": "Bearer never-registered", "X-Api-Key": "k", "X-Other": "v sk-header-secret"}
    assert redact_headers(headers) == {"Authorization": MASK, "X-Api-Key": MASK, "X-Other": f"v {MASK}"}


def test_replies_are_masked_answer_included() -> None:
    register_secret("sk-reply-secret")
    reply = Reply(
        text="the key is sk-reply-secret",
        structure={"k": "sk-reply-secret"},
        tool_calls=[ToolCall(name="t", arguments={"key": "sk-reply-secret"})],
        raw={"headers": {"Authorization": "Bearer sk-reply-secret"}},
    )
    clean = redact_reply(reply)
    assert "sk-reply-secret" not in clean.model_dump_json()
    assert clean.text == f"the key is {MASK}"


def test_expand_env_reads_and_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_TEST_SECRET_TOKEN", "tok-from-the-env")
    assert expand_env("Bearer $ENV.FARM_TEST_SECRET_TOKEN", where="f: k") == "Bearer tok-from-the-env"
    assert redact("tok-from-the-env") == MASK
    assert expand_env("no reference", where="f: k") == "no reference"


def test_expand_env_names_the_place_of_a_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FARM_TEST_MISSING_VAR", raising=False)
    with pytest.raises(AgentResolutionError, match=r"conn\.yao: options\.key: .*FARM_TEST_MISSING_VAR"):
        expand_env("$ENV.FARM_TEST_MISSING_VAR", where="conn.yao: options.key")
