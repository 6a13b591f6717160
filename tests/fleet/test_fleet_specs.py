"""``--rate-limit`` and ``rate_limit`` (SPEC 13): the grammar, its errors, which limit a key gets."""

from __future__ import annotations

import re

import pytest

from farm.errors import SettingsError
from farm.plan.rate_specs import LimitTable, RateLimit, declared_limit, parse_flag, parse_limit


def test_the_flag_of_the_issue_parses() -> None:
    limits = parse_flag(["openai=600/m,200000tok/m,8conc"])
    assert limits == {"openai": RateLimit(requests_per_s=10, tokens_per_s=200000 / 60, concurrency=8)}
    assert limits["openai"].describe() == "600/m,200000tok/m,8conc"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("5/s", RateLimit(requests_per_s=5)),
        ("0.5/s", RateLimit(requests_per_s=0.5)),
        (".5/s", RateLimit(requests_per_s=0.5)),
        ("90/m", RateLimit(requests_per_s=1.5)),
        ("1000tok/m", RateLimit(tokens_per_s=1000 / 60)),
        ("3conc", RateLimit(concurrency=3)),
        (" 3conc , 1/s ", RateLimit(requests_per_s=1, concurrency=3)),
    ],
)
def test_each_spec(spec: str, expected: RateLimit) -> None:
    assert parse_limit(spec, where="--rate-limit k") == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("openai", "--rate-limit 'openai': expected KEY=SPEC"),
        ("=5/s", "expected KEY=SPEC"),
        ("k=", "--rate-limit k: expected SPEC"),
        ("k=5/h", "--rate-limit k: '5/h' is not a limit: expected N/s, N/m, Ntok/m or Nconc"),
        ("k=0/s", "'0/s': the number must be greater than 0"),
        ("k=1.5conc", "a concurrency cap is a whole number of calls"),
        ("k=5/s,10/m", "'10/m': a request rate given twice"),
        ("k=-1/s", "'-1/s' is not a limit"),
        ("k=5tok/s", "'5tok/s' is not a limit"),
    ],
)
def test_bad_flags_name_the_flag_and_the_problem(value: str, message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)) as caught:
        parse_flag([value])
    assert caught.value.message.startswith("--rate-limit")


def test_a_key_given_twice_is_an_error() -> None:
    with pytest.raises(SettingsError, match="key 'k' given twice"):
        parse_flag(["k=1/s", "k=2/s"])


def test_a_yao_file_declares_its_limit_and_errors_name_the_file_and_key() -> None:
    assert declared_limit({"rate_limit": "60/m"}, where="conn/a.conn.yao") == RateLimit(requests_per_s=1)
    assert declared_limit({"type": "openai"}, where="conn/a.conn.yao") is None
    with pytest.raises(SettingsError, match=r"^conn/a.conn.yao: rate_limit: '60/h' is not a limit"):
        declared_limit({"rate_limit": "60/h"}, where="conn/a.conn.yao")
    with pytest.raises(SettingsError, match=r"^pkg/package.yao: rate_limit: expected a string"):
        declared_limit({"rate_limit": 60}, where="pkg/package.yao")


def test_the_command_line_wins_dimension_by_dimension_then_the_wildcard_applies() -> None:
    table = LimitTable(parse_flag(["openai.gpt-4o=8conc", "*=2conc"]))
    table.declare("openai.gpt-4o", parse_limit("600/m,4conc", where="x"))
    table.declare("keyword", parse_limit("5/s", where="y"))
    assert table.for_key("openai.gpt-4o") == RateLimit(requests_per_s=10, concurrency=8)
    assert table.for_key("keyword") == RateLimit(requests_per_s=5)  # its own declaration beats '*'
    assert table.for_key("other") == RateLimit(concurrency=2)
    assert LimitTable().for_key("other").empty
