"""Property tests: on any input the loaders return cases or raise ``InputError``, nothing else."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from farm.checks.spec import ASSERTION_KEYS, RESPONSE_KEYS, STOCK_TESTS, YAO_TYPES
from farm.errors import InputError
from farm.suites import load_input
from farm.suites.hocon import HOCON_KEYS, INTERACTION_KEYS
from farm.suites.jsonl import YAO_KEYS

pytestmark = pytest.mark.slow  # hundreds of generated suites per test

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12)
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def keyed(keys: tuple[str, ...] | list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects whose keys are mostly the ones a loader knows, so validation code is reached."""
    return st.dictionaries(st.sampled_from(list(keys)) | st.text(max_size=6), values, max_size=len(keys))


assertions = keyed(ASSERTION_KEYS, st.sampled_from(YAO_TYPES) | json_values)
yao_cases = keyed(YAO_KEYS, json_values | assertions | st.lists(assertions, max_size=3))
stock_blocks = keyed([*STOCK_TESTS, "answer", "a.b"], json_values)
responses = keyed(RESPONSE_KEYS, stock_blocks | json_values)
interactions = keyed(INTERACTION_KEYS, responses | json_values)
hocon_cases = keyed(HOCON_KEYS, st.lists(interactions, max_size=3) | json_values)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def load_or_input_error(path: Path) -> None:
    try:
        loaded = load_input(str(path))
    except InputError as exc:
        assert str(exc)  # every error says something
        return
    # What loads must be usable: unique ids, and every case survives the JSON trip to a worker.
    ids = [case.id for case in loaded.cases]
    assert len(ids) == len(set(ids))
    assert all(type(case).model_validate_json(case.model_dump_json()) == case for case in loaded.cases)


@FUZZ
@given(data=st.binary(max_size=400))
def test_jsonl_any_bytes(workdir: Path, data: bytes) -> None:
    path = workdir / "bytes.jsonl"
    path.write_bytes(data)
    load_or_input_error(path)


@FUZZ
@given(lines=st.lists(yao_cases | json_values, min_size=1, max_size=4))
def test_jsonl_structured_lines(workdir: Path, lines: list[Any]) -> None:
    path = workdir / "lines.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    load_or_input_error(path)


any_code_points = st.text(st.characters(categories=["Cs"]) | st.characters(), max_size=8)  # lone surrogates too


@FUZZ
@given(case_id=any_code_points, text=any_code_points)
def test_jsonl_ids_and_inputs_of_any_code_points(workdir: Path, case_id: str, text: str) -> None:
    path = workdir / "points.jsonl"
    path.write_text(json.dumps({"id": case_id, "input": text or "x", "expected": text}) + "\n")  # escapes: ASCII
    load_or_input_error(path)


@FUZZ
@given(text=st.text(max_size=300))
def test_hocon_any_text(workdir: Path, text: str) -> None:
    if "include" in text:  # includes could name arbitrary files or URLs
        text = text.replace("include", "inclde")
    path = workdir / "text.hocon"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    load_or_input_error(path)


@settings(FUZZ, max_examples=100)  # pyhocon needs ~30 ms a file
@given(case=hocon_cases)
def test_hocon_structured(workdir: Path, case: dict[str, Any]) -> None:
    path = workdir / "case.hocon"
    path.write_text(json.dumps(case))  # HOCON is a superset of JSON
    load_or_input_error(path)
