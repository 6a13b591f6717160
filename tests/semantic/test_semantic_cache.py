"""Embeddings cached by text in each process, and semantic figures turned off (issue 45, SPEC 16, 26)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from farm import TestSettings, run_sweep, write_report
from farm.errors import SettingsError
from farm.semantic import embedding_cache
from farm.semantic.cache import EmbeddingCache
from farm.settings import DEFAULT_SEMANTIC_CACHE, semantic_cache_entries, semantic_enabled
from tests.support.semantic_model import needs_model

ROOT = Path(__file__).resolve().parents[2]
AGENTS = Path(__file__).resolve().parents[1] / "agents" / "meanings.py"


def _suite(tmp_path: Path, cases: int) -> Path:
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": f"c{i}", "input": "What is the capital of France?"}) + "\n"
                             for i in range(cases)))
    return suite


def _settings(tmp_path: Path, agent: str, cases: int = 2, runs: int = 8, **more: Any) -> TestSettings:
    return TestSettings(input=str(_suite(tmp_path, cases)), name=f"py:{AGENTS}:{agent}", runs=runs,
                        cwd=str(tmp_path), **more)


class Rows:
    """A stand-in encoder for the cache's own tests: a fixed row per text, and the texts it was asked for."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(self, texts: list[str]) -> Any:
        self.asked.append(list(texts))
        return np.array([[float(len(t)), float(ord(t[0]))] + [0.0] * 382 for t in texts], dtype=np.float32)


def test_known_texts_are_not_computed_again() -> None:
    cache, rows = EmbeddingCache(limit=10), Rows()
    first = cache.embed(["good", "bad", "good"], rows)
    again = cache.embed(["bad", "good"], rows)
    assert rows.asked == [["good", "bad"]]  # each new text once; nothing when all are known
    assert np.array_equal(again, first[[1, 0]]) and first.dtype == np.float32 and first.shape == (3, 384)
    stats = cache.stats()
    assert (stats.embedded, stats.reused, stats.entries, stats.limit) == (2, 3, 2, 10)


def test_the_least_recently_used_text_goes_first() -> None:
    cache, rows = EmbeddingCache(limit=2), Rows()
    cache.embed(["a", "b"], rows)
    cache.embed(["a"], rows)  # a is used again: b is now the oldest
    cache.embed(["c"], rows)
    cache.embed(["a", "b"], rows)
    assert rows.asked == [["a", "b"], ["c"], ["b"]]
    assert cache.stats().entries == 2


def test_a_cache_of_zero_keeps_nothing() -> None:
    cache, rows = EmbeddingCache(limit=0), Rows()
    cache.embed(["a", "b"], rows)
    assert len(cache.embed(["a", "b", "a"], rows)) == 3
    assert rows.asked == [["a", "b"], ["a", "b"]] and cache.stats().entries == 0


def test_the_settings_are_read_and_checked() -> None:
    assert semantic_enabled({}) and semantic_enabled({"FARM_SEMANTIC": "1"})
    assert not semantic_enabled({"FARM_SEMANTIC": "0"}) and not semantic_enabled({"FARM_SEMANTIC": "off"})
    assert semantic_cache_entries({}) == DEFAULT_SEMANTIC_CACHE
    assert semantic_cache_entries({"FARM_SEMANTIC_CACHE": "0"}) == 0
    with pytest.raises(SettingsError, match="FARM_SEMANTIC='maybe'"):
        semantic_enabled({"FARM_SEMANTIC": "maybe"})
    with pytest.raises(SettingsError, match="FARM_SEMANTIC_CACHE='-1'"):
        semantic_cache_entries({"FARM_SEMANTIC_CACHE": "-1"})


@needs_model
def test_a_second_case_with_the_same_answers_embeds_nothing(tmp_path: Path) -> None:
    """Two cases giving the same four answers: the model embeds four texts, not eight; a second
    sweep in the same process (a worker's next sweep) embeds none."""
    cache = embedding_cache()
    cache.clear()
    report = run_sweep(_settings(tmp_path, "paraphrases"))
    assert [c.semantic_status for c in report.results] == ["computed", "computed"]
    assert [(cache.stats().embedded, cache.stats().reused)] == [(4, 4)]
    again = run_sweep(_settings(tmp_path, "paraphrases"))
    assert (cache.stats().embedded, cache.stats().reused) == (4, 12)
    assert [c.semantic_clusters for c in again.results] == [c.semantic_clusters for c in report.results]


_FIGURES = """
import json, sys
from farm import TestSettings, run_sweep
from farm.semantic import embedding_cache
report = run_sweep(TestSettings(input=sys.argv[1], name=sys.argv[2], runs=10))
stats = embedding_cache().stats()
print(json.dumps({"cases": {c.id: [c.semantic_status, c.semantic_consistency,
                                   [[k.count, k.share, k.example] for k in c.semantic_clusters or []]]
                            for c in report.results},
                  "embedded": stats.embedded, "reused": stats.reused, "entries": stats.entries}))
"""


def _figures(tmp_path: Path, cache: str) -> dict[str, Any]:
    suite = _suite(tmp_path, 6)
    done = subprocess.run([sys.executable, "-c", _FIGURES, str(suite), f"py:{AGENTS}:overlapping"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "FARM_SEMANTIC_CACHE": cache})
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


@needs_model
def test_the_figures_are_the_same_with_and_without_the_cache(tmp_path: Path) -> None:
    """Six cases of six answers, neighbours sharing four: with the cache each case after the first
    embeds only its new answers (in other batches than without it), and every case's clusters
    and consistency are the same as when every case embeds all of its own."""
    cached, uncached = _figures(tmp_path, "10000"), _figures(tmp_path, "0")
    assert (uncached["embedded"], uncached["reused"], uncached["entries"]) == (36, 0, 0)
    assert cached["embedded"] == 13 and cached["reused"] == 23 and cached["entries"] == 13
    assert cached["cases"] == uncached["cases"]
    assert {status for status, _, _ in cached["cases"].values()} == {"computed"}
    assert len({len(clusters) for _, _, clusters in cached["cases"].values()}) > 1  # not all alike: a real check


def test_no_semantic_says_the_figures_were_turned_off_in_every_report(tmp_path: Path, farm_cli: Any) -> None:
    outputs = [tmp_path / f"r.{ext}" for ext in ("jsonl", "json", "md", "html", "xml")]
    suite = _suite(tmp_path, 2)
    done = farm_cli.run("test", "-i", str(suite), "-n", f"py:{AGENTS}:paraphrases", "--runs", "4", "--no-progress",
                        "--no-semantic", *(arg for out in outputs for arg in ("-o", str(out))), local=True)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in outputs[0].read_text().splitlines()]
    assert {line["semantic_status"] for line in lines if line["type"] == "stability"} == {"off"}
    assert next(line for line in lines if line["type"] == "summary")["semantic"] == "off"
    report = json.loads(outputs[1].read_text())
    assert report["summary"]["semantic"] == "off" and "semantic" not in report["metadata"]  # a plan field, not a key
    assert [(c["semantic_status"], c["semantic_consistency"]) for c in report["results"]] == [("off", None)] * 2
    assert "not computed: turned off (--no-semantic or FARM_SEMANTIC=0)" in outputs[2].read_text().replace("\\", "")
    assert "turned off (--no-semantic or FARM_SEMANTIC=0)" in outputs[3].read_text()
    props = {p.get("name"): p.get("value") for p in ET.parse(outputs[4]).getroot().iter("property")}
    assert props["semantic"] == "off" and "semantic_consistency" not in props


def test_farm_semantic_0_turns_them_off_and_embeds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FARM_SEMANTIC", "0")
    before = embedding_cache().stats()
    report = run_sweep(_settings(tmp_path, "unrelated"))
    assert report.summary.semantic == "off" and {c.semantic_status for c in report.results} == {"off"}
    assert embedding_cache().stats() == before
    write_report(report, tmp_path / "r.md")
    assert "turned off" in (tmp_path / "r.md").read_text()
    monkeypatch.setenv("FARM_SEMANTIC", "1")
    on = run_sweep(_settings(tmp_path, "steady", semantic=False))  # the flag wins over the setting
    assert on.summary.semantic == "off"


def test_a_bad_setting_is_exit_2_before_anything_runs(tmp_path: Path, farm_cli: Any) -> None:
    suite = _suite(tmp_path, 1)
    for name, value in (("FARM_SEMANTIC", "maybe"), ("FARM_SEMANTIC_CACHE", "lots")):
        done = farm_cli.run("test", "-i", str(suite), "-n", f"py:{AGENTS}:steady", "--no-progress", local=True,
                            env={name: value})
        assert done.returncode == 2 and f"{name}={value!r}" in done.stderr, done.stderr


def test_a_worker_leaves_them_off_for_a_sweep_submitted_without_them(tmp_path: Path, farm_cli: Any,
                                                                      farm_worker: Any) -> None:
    farm_worker(queue="nosemantic")
    done = farm_cli.run("test", "-i", str(_suite(tmp_path, 2)), "-n", f"py:{AGENTS}:paraphrases", "--runs", "4",
                        "--no-progress", "--no-semantic", "--broker", farm_cli.broker, "--queue", "nosemantic",
                        "-o", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["semantic"] == "off"
    assert {c["semantic_status"] for c in report["results"]} == {"off"}


def test_a_pair_of_answers_is_cut_as_scipy_cuts_it() -> None:
    """Two distinct answers are cut without scipy.cluster: the same labels as its tree gives, for
    pairs on both sides of every threshold (relative and absolute) and at them."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    from farm.semantic.cluster import case_threshold, meaning_labels

    rng = np.random.default_rng(45)
    first = rng.normal(size=384)
    first /= np.linalg.norm(first)
    other = rng.normal(size=384)
    other -= (other @ first) * first
    other /= np.linalg.norm(other)
    for similarity in [*np.linspace(-0.2, 1.0, 61), 0.3, 0.6, 0.35, 0.55]:
        pair = np.array([first, similarity * first + np.sqrt(max(0.0, 1 - similarity ** 2)) * other], dtype=np.float32)
        for relative in (True, False):
            rows = pair.astype(np.float64)
            sims = rows @ rows.T
            sims = (sims + sims.T) / 2
            distance = np.clip(1.0 - sims, 0.0, 2.0)
            np.fill_diagonal(distance, 0.0)
            cut = 1.0 - (case_threshold(sims) if relative else 0.6)
            expected = fcluster(linkage(squareform(distance, checks=False), method="average"), cut + 1e-9,
                                criterion="distance")
            got = meaning_labels(pair, relative=relative)
            assert (got[0] == got[1]) == (expected[0] == expected[1]), (similarity, relative)


def test_a_report_rebuilt_from_the_journal_keeps_them_off(tmp_path: Path, farm_cli: Any) -> None:
    """``farm report JOURNAL`` aggregates the runs again: a sweep run without the figures stays without."""
    data = tmp_path / "data"
    done = farm_cli.run("test", "-i", str(_suite(tmp_path, 2)), "-n", f"py:{AGENTS}:paraphrases", "--runs", "4",
                        "--no-progress", "--no-history", "--no-semantic", "-o", str(tmp_path / "r.json"), local=True,
                        env={"FARM_DATA_DIR": str(data)})
    assert done.returncode == 0, done.stderr
    [journal] = (data / "journals").glob("*.jsonl")  # its index (.jsonl.index) beside it
    done = farm_cli.run("report", str(journal), "-o", str(tmp_path / "again.json"), local=True,
                        env={"FARM_DATA_DIR": str(data)})
    assert done.returncode == 0, done.stderr
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["summary"]["semantic"] == "off" and {c["semantic_status"] for c in again["results"]} == {"off"}
