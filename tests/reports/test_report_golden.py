"""The reports a user reads keep their keys and values: each quick in-process ``examples/`` suite
is run through the real ``farm test`` and its JSON, JSONL, Markdown and JUnit reports are compared
with goldens written by the farm before the sweep's envelope was typed (issue 38).

Times, ids, durations, paths and the git facts are normalised; everything else must match key by
key. ``FARM_WRITE_GOLDENS=1`` writes the goldens again (only when a change of a report is meant).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from farm.cli import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "goldens"
EXAMPLES = REPO / "examples"

SCENARIOS: dict[str, tuple[str, ...]] = {
    "flaky": ("-i", "{work}/flaky/tests/inputs.jsonl", "--runs", "20", "--parallel", "4", "--tag", "team=core",
              "--tag", "nightly=yes", "--pass-k", "1", "--pass-k", "5", "--min-overall-pass-rate", "0.5"),
    "keyword": ("-i", "{work}/keyword/tests/inputs.jsonl", "--runs", "6", "--parallel", "1", "--adaptive", "exact",
                "--rate-limit", "keyword=1000/s", "--no-judge-cache", "--min-pass-rate", "0.8"),
    "multiturn": ("-i", "{work}/multiturn/tests", "--runs", "2", "--baseline", "last"),
    "journal": ("-i", "{work}/keyword/tests/inputs.jsonl", "--runs", "2", "--tag", "team=core"),
    "quarantined": ("-i", "{work}/keyword/tests/inputs.jsonl", "--runs", "2", "--no-history",
                    "--quarantine", "{work}/quarantine.toml"),
}
"""Each scenario's ``farm test`` flags (``{work}``: a copy of ``examples/``); ``journal``'s reports are
then written again by ``farm report`` from its run journal, with a bad line added to it."""

FORMATS = ("json", "jsonl", "md", "xml")
_TIME_KEYS = re.compile(r"(_ms|_at|_s|duration|timestamp|time|sweep_id|journal|commit|dirty|branch|head|in_flight)$")
_RUN_DEPENDENT = ("version", "git", "load_bias")
"""Whole values that change from run to run: ``load_bias`` splits runs by how many ran beside
each, which the scheduler decides (SPEC 25)."""
_MD_NUMBERS = re.compile(r"\b\d+(\.\d+)?\s?(ms|s)\b")
_SWEEP_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{6}")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _text(value: str, work: Path) -> str:
    value = value.replace(str(work), "<work>")
    value = _SWEEP_ID.sub("<sweep_id>", value)
    return _ISO.sub("<time>", value)


def normalised(value: Any, work: Path, key: str = "") -> Any:
    """``value`` with what changes from run to run replaced by a placeholder."""
    if key in _RUN_DEPENDENT or (_TIME_KEYS.search(key) and isinstance(value, (int, float, str))):
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: normalised(v, work, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v, work) for v in value]
    if isinstance(value, str):
        return _text(value, work)
    return value


def _flat_text(text: str, work: Path) -> str:
    text = _text(text, work)
    text = re.sub(r'(time|timestamp|duration_ms)="[^"]*"', r'\1="<n>"', text)
    text = re.sub(r'(name="(version|[a-z_]*(_ms|_at|duration))" value=)"[^"]*"', r'\1"<n>"', text)
    text = re.sub(r"<version>|farm \d+\.\d+\S*", "<version>", text)
    # load (SPEC 25): how many runs ran beside each is the scheduler's, not the report's
    text = re.sub(r", \d+ in flight\)", ", <n> in flight)", text)
    # a case's load line is there only when its runs fell on both sides of the median: left out
    text = re.sub(r"(?m)^(Load: .*\n\n|\| Load Bias \| .*\n|\s*<property name=\"load_bias\" value=\"[^\"]*\" />\n)", "",
                  text)
    return _MD_NUMBERS.sub("<n> s", text)


def render(name: str, tmp: Path) -> dict[str, Any]:
    """The scenario's reports, normalised: {format: content}."""
    work = tmp / "examples"
    if not work.exists():
        shutil.copytree(EXAMPLES, work, ignore=shutil.ignore_patterns("__pycache__"))
        (work / "quarantine.toml").write_text('[[quarantine]]\ncase = "T00*"\nowner = "ana"\n'
                                              'reason = "upstream model drift"\nuntil = 2099-12-31\n')
    history = f"sqlite:///{tmp / 'history.db'}"
    args = [a.format(work=work) for a in SCENARIOS[name]]
    if name == "multiturn":  # the baseline: one sweep before
        CliRunner().invoke(main, ["test", "--no-progress", "--no-semantic", "--history", history, *args[:4]],
                           catch_exceptions=False)
    outs = [x for fmt in FORMATS for x in ("-o", str(tmp / f"{name}.{fmt}"))]
    extra = [] if "--no-history" in args else ["--history", history]
    # --no-semantic: the figures do not hang on whether the [semantic] extra is installed
    result = CliRunner().invoke(main, ["test", "--no-progress", "--no-semantic", *extra, *args, *outs],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    if name == "journal":
        journal = Path(json.loads((tmp / f"{name}.json").read_text())["metadata"]["journal"])
        with journal.open("a", encoding="utf-8") as lines:
            lines.write("not json\n")
        result = CliRunner().invoke(main, ["report", str(journal), *outs], catch_exceptions=False)
        assert result.exit_code in (0, 1) and "1 bad line" in result.output, result.output
    got: dict[str, Any] = {}
    for fmt in FORMATS:
        text = (tmp / f"{name}.{fmt}").read_text()
        if fmt == "json":
            got[fmt] = normalised(json.loads(text), work)
            got["metadata_order"] = list(json.loads(text)["metadata"])  # the keys in the order written
        elif fmt == "jsonl":
            got[fmt] = [normalised(json.loads(line), work) for line in text.splitlines() if line.strip()]
        else:
            got[fmt] = _flat_text(text, work)
    return got


def _paths(value: Any, at: str = "") -> dict[str, Any]:
    """Every leaf of ``value`` by its path (``metadata.settings.runs``): the key-by-key view."""
    if isinstance(value, dict):
        out: dict[str, Any] = {f"{at}{{}}": sorted(value)}
        for k, v in value.items():
            out |= _paths(v, f"{at}.{k}" if at else k)
        return out
    if isinstance(value, list):
        out = {f"{at}[]": len(value)}
        for i, v in enumerate(value):
            out |= _paths(v, f"{at}[{i}]")
        return out
    return {at: value}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_reports_keep_their_keys_and_values(name: str, tmp_path: Path) -> None:
    got = render(name, tmp_path)
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("FARM_WRITE_GOLDENS") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(golden.read_text())
    assert sorted(got["json"]["metadata"]) == sorted(want["json"]["metadata"])  # the key set first: clearest
    for fmt in ("json", "jsonl"):
        mine, theirs = _paths(got[fmt]), _paths(want[fmt])
        assert {k: v for k, v in mine.items() if theirs.get(k) != v} == {k: v for k, v in theirs.items()
                                                                         if mine.get(k) != v}, fmt
    assert got["metadata_order"] == want["metadata_order"]
    for fmt in ("md", "xml"):
        assert got[fmt].splitlines() == want[fmt].splitlines(), fmt
