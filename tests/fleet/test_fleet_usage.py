"""Usage as providers report it, summed; prices and costs (SPEC 13)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from farm.agents.neuro_san_stream import token_usage
from farm.errors import SettingsError
from farm.models.usage import Usage, UsageTotals, parse_usage, reported_cost
from farm.stats.prices import Price, PriceTable, call_cost, cost_per_passing_run
from tests.support.servers import openai_server

OPENAI_CHAT = {
    "prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
    "prompt_tokens_details": {"cached_tokens": 1000, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 200},
}


def test_openai_chat_usage_with_cached_and_reasoning_tokens() -> None:
    assert parse_usage(OPENAI_CHAT) == Usage(input_tokens=1200, output_tokens=300, cached_tokens=1000,
                                             reasoning_tokens=200)


def test_openai_responses_and_anthropic_usage() -> None:
    responses = {"input_tokens": 50, "output_tokens": 9, "input_tokens_details": {"cached_tokens": 10},
                 "output_tokens_details": {"reasoning_tokens": 4}}
    assert parse_usage(responses) == Usage(50, 9, 10, 4)
    anthropic = {"input_tokens": 20, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5,
                 "output_tokens": 7}
    assert parse_usage(anthropic) == Usage(input_tokens=125, output_tokens=7, cached_tokens=100)


def test_neuro_san_accounting_and_its_cost() -> None:
    raw = token_usage({"total_tokens": 13, "prompt_tokens": 8, "completion_tokens": 5, "total_cost": 0.0021})
    assert parse_usage(raw) == Usage(input_tokens=8, output_tokens=5)
    assert reported_cost(raw) == 0.0021
    # LangChain's callback reports 0 for a model it cannot price: unknown, not free
    assert reported_cost({"prompt_tokens": 8, "completion_tokens": 5, "total_cost": 0.0}) is None


def test_what_is_not_reported_stays_absent() -> None:
    assert parse_usage({"prompt_tokens": 3}) == Usage(input_tokens=3)
    assert Usage(input_tokens=3).to_dict() == {"input_tokens": 3}
    assert parse_usage({"total_tokens": 9}) is None
    assert parse_usage(None) is None
    assert parse_usage({"prompt_tokens": -1, "completion_tokens": True, "cached_tokens": 1.5}) is None
    assert parse_usage(Usage(1, 2, 0, None).to_dict()) == Usage(1, 2, 0, None)  # idempotent


def test_the_bundled_openai_compatible_server_reports_usage_we_read() -> None:
    body = {"model": "echo", "messages": [{"role": "user", "content": "one two three"}]}
    with openai_server() as served:
        request = urllib.request.Request(f"{served.url}/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.load(response)
    assert parse_usage(answer["usage"]) == Usage(input_tokens=3, output_tokens=3)


def test_sums_keep_unknown_fields_absent_and_unknown_costs_unknown() -> None:
    totals = UsageTotals()
    totals.add(Usage(input_tokens=10, output_tokens=2), 0.5)
    totals.add(Usage(input_tokens=5, reasoning_tokens=1), 0.25)
    assert totals.to_dict() == {"usage": {"input_tokens": 15, "output_tokens": 2, "reasoning_tokens": 1},
                                "cost_usd": 0.75}
    sweep = UsageTotals()
    sweep.merge(totals)
    sweep.merge(UsageTotals())
    assert sweep.to_dict()["cost_usd"] == 0.75
    totals.add(None, None)  # a run that reported nothing: the total cost is not known any more
    sweep.merge(totals)
    assert sweep.to_dict() == {"usage": {"input_tokens": 30, "output_tokens": 4, "reasoning_tokens": 2},
                               "cost_usd": None}
    assert UsageTotals().to_dict() == {"usage": {}, "cost_usd": None}


def test_cost_counts_cached_input_at_its_own_price() -> None:
    price = Price(input=2.5, output=10.0, cached_input=1.25)
    usage = parse_usage(OPENAI_CHAT)
    assert usage is not None
    assert price.cost(usage) == pytest.approx((200 * 2.5 + 1000 * 1.25 + 300 * 10.0) / 1e6)
    assert Price(input=1, output=1).cost(Usage(input_tokens=10, cached_tokens=10)) == pytest.approx(10 / 1e6)
    assert price.cost(Usage(reasoning_tokens=5)) is None
    assert price.most(1000) == pytest.approx(0.01)


def test_unknown_prices_are_none_never_zero() -> None:
    table = PriceTable.bundled()
    assert table.price("openai.gpt-4o", "gpt-4o-2024-08-06") == table.price("gpt-4o")
    assert table.price("claude-sonnet-4-20250514") == Price(input=3.0, output=15.0, cached_input=0.3)
    assert table.price("local.echo", "echo") is None
    assert call_cost(Usage(input_tokens=5), None) is None
    assert call_cost(Usage(input_tokens=5), None, reported=0.01) == 0.01
    assert call_cost(None, Price(1, 1)) is None
    assert cost_per_passing_run(1.0, 4) == 0.25
    assert cost_per_passing_run(1.0, 0) is None
    assert cost_per_passing_run(None, 4) is None


def test_a_price_file_overrides_the_bundled_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"gpt-4o": {"input": 1, "output": 2}, "local.echo": {"input": 0,
                                                                                               "output": 0}}}))
    table = PriceTable.from_env({"FARM_PRICES": str(path)})
    assert table.price("gpt-4o") == Price(1.0, 2.0)
    assert table.price("local.echo") == Price(0.0, 0.0)  # a price of 0 stated on purpose is known
    assert table.price("gpt-4o-mini") is not None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "not a valid price file"),
        ('{"models": []}', "models: expected an object"),
        ('{"models": {"m": {"input": 1}}}', "models.m.output: expected a number"),
        ('{"models": {"m": {"input": -1, "output": 1}}}', "models.m.input: expected a number"),
        ('{"models": {"m": {"input": 1, "output": 1, "per": 1}}}', "models.m: unknown key 'per'"),
    ],
)
def test_bad_price_files_name_the_file_and_key(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(SettingsError, match=message) as caught:
        PriceTable.from_env({"FARM_PRICES": str(path)})
    assert str(path) in caught.value.message
