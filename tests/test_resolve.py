"""``farm test``'s flags resolved once into what each stage takes (issue 25, item 7).

The CLI builds ``TestSettings`` from its flags; ``farm.api.resolve_specs`` reads it once into a
spec per stage, and ``prepare_sweep`` hands those on (``PreparedSweep.specs``): these tests pin the
mapping, so a flag that stops reaching its stage fails here rather than in a sweep.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from farm.agents.options import AgentOptions
from farm.api import TestSettings, prepare_sweep, resolve_specs
from farm.api.specs import RunShape, SourceSpec, SweepExtras, SweepSpecs
from farm.cli.test import test as farm_test
from farm.history.facts import RECORDED_SETTINGS, HistoryFacts, recorded_settings
from farm.models import SweepEnvelope
from farm.plan.batch import PlanSpec
from farm.plan.fleet import BudgetLimit, FleetFlags, FleetRequest
from farm.plan.yao_options import EnvironmentSpec
from farm.reports.outputs import OutputSpec
from farm.run.environment import RunEnvironment
from farm.settings import semantic_enabled
from farm.suites import LoadOptions
from farm.sweep.executor import ExecutorOptions

AGENTS = Path(__file__).resolve().parent / "agents" / "basic.py"


def _every_flag(cwd: Path) -> TestSettings:
    return TestSettings(
        input="s.jsonl", outputs=("a.json", "b.html"), name="py:agent.py:respond", connector="openai.gpt-4o",
        user="u1", team="t1", reporter="report.html", runs=7, timeout_s=30.0, parallel=3, verbose=True,
        fail_fast=True, broker="redis://:secret@host:6379/0", queue="q1", detach=True, min_pass_rate=0.9,
        judge="openai.gpt-4o-mini", patterns=("smoke", "b-*"), neuro_san_compat=True, run_pattern="^a",
        before="hooks.py:before", after="hooks.py:after", dry_run=True,
        fleet=FleetFlags(budget_usd=5.0, adaptive=True), cwd=str(cwd),
    )


def test_every_flag_reaches_the_spec_of_its_stage(tmp_path: Path) -> None:
    settings = _every_flag(tmp_path)
    assert resolve_specs(settings) == SweepSpecs(
        plan=PlanSpec(agent_name="py:agent.py:respond", runs=7, min_pass_rate=0.9,
                      adaptive=settings.fleet.adaptive_rule(), run_pattern="^a", patterns=("smoke", "b-*")),
        fleet=FleetRequest(budget=BudgetLimit(max_usd=5.0), adaptive=settings.fleet.adaptive_rule()),
        outputs=OutputSpec(outputs=("a.json", "b.html"), reporter="report.html", verbose=True),
        executor=ExecutorOptions(broker="redis://:secret@host:6379/0", queue="q1", detach=True),
        history=HistoryFacts(runs=7, min_pass_rate=0.9, parallel=3, timeout_s=30.0, fail_fast=True,
                             name="py:agent.py:respond", connector="openai.gpt-4o", judge="openai.gpt-4o-mini",
                             queue="q1", neuro_san_compat=True, user="u1", team="t1", detach=True, distributed=True,
                             cwd=tmp_path),
        extras=SweepExtras(before="hooks.py:before", after="hooks.py:after", cwd=str(tmp_path), listing="json"),
        agents=AgentOptions.from_env(tmp_path, connector="openai.gpt-4o", judge="openai.gpt-4o-mini",
                                     neuro_san_server=None),
        source=SourceSpec(input="s.jsonl", message=None, cwd=tmp_path,
                          load=LoadOptions(foreign_agent="py:agent.py:respond")),  # -n names no neuro-san server
        environment=EnvironmentSpec(RunEnvironment(user="u1", team="t1", connector="openai.gpt-4o", timeout_s=30.0,
                                                   neuro_san_compat=True), cwd=str(tmp_path)),
        shape=RunShape(parallel=3, semantic=semantic_enabled(), fail_fast=True),
        envelope=SweepEnvelope(min_pass_rate=0.9, runs=7, reporter="report.html"),
        cases="models", agents_here=False,  # --dry-run lists the planned cases, calls no agent
        verbose=True,
    )
    assert settings.fleet.adaptive_rule() is not None  # the plan spec's rule is a real one, not None twice


def test_the_defaults_resolve_to_an_in_process_sweep_with_no_extras(tmp_path: Path) -> None:
    specs = resolve_specs(TestSettings(input="s.jsonl", cwd=str(tmp_path)))
    assert specs.executor == ExecutorOptions(broker=None, queue="farm", detach=False)
    assert specs.extras == SweepExtras(cwd=str(tmp_path), listing=None)
    assert specs.outputs == OutputSpec()
    assert specs.plan == PlanSpec()
    assert resolve_specs(TestSettings(collect_only=True)).extras.listing == "ids"
    assert resolve_specs(TestSettings(collect_only=True, dry_run=True)).extras.listing == "json"  # --dry-run wins


def test_the_history_keeps_the_same_settings_and_never_the_broker_url(tmp_path: Path) -> None:
    kept = recorded_settings(resolve_specs(_every_flag(tmp_path)).history)
    assert list(kept) == [*RECORDED_SETTINGS, "distributed"]
    assert kept == {"runs": 7, "min_pass_rate": 0.9, "parallel": 3, "timeout_s": 30.0, "fail_fast": True,
                    "pattern": None, "name": "py:agent.py:respond", "connector": "openai.gpt-4o",
                    "judge": "openai.gpt-4o-mini", "queue": "q1", "neuro_san_compat": True, "user": "u1",
                    "team": "t1", "detach": True, "confirm_failures": 1, "distributed": True}
    assert "secret" not in json.dumps(kept)


def test_a_prepared_sweep_carries_the_specs_its_stages_were_given(tmp_path: Path) -> None:
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps({"id": "c1", "input": "x"}) + "\n" + json.dumps({"id": "c2", "input": "y"}) + "\n")
    settings = TestSettings(input=str(suite), name=f"py:{AGENTS}:echo", runs=3, parallel=2, patterns=("c1",),
                            outputs=(str(tmp_path / "r.json"),), fleet=FleetFlags(max_tokens=1000), cwd=str(tmp_path))
    prepared = prepare_sweep(settings)
    assert prepared.specs == resolve_specs(settings)
    assert [c.id for c in prepared.plan.cases] == ["c1"] and prepared.plan.total_runs == 3  # the plan spec
    assert prepared.plan.parallel == 2
    assert prepared.plan.fleet.budget is not None and prepared.plan.fleet.budget.max_tokens == 1000  # the fleet flags
    assert [(t.path, t.format) for t in prepared.outputs] == [(tmp_path / "r.json", "json")]  # the output spec


def test_the_cli_flags_reach_the_specs(tmp_path: Path) -> None:
    """The command line, not a hand-built ``TestSettings``: ``--dry-run`` reaches the extras (it
    lists, runs nothing), ``-k`` and ``--runs`` the plan spec (the listing shows them)."""
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": i, "input": "x"}) + "\n" for i in ("c1", "c2")))
    done = CliRunner().invoke(farm_test, ["-i", str(suite), "-n", f"py:{AGENTS}:echo", "-k", "c2", "--runs", "4",
                                          "--dry-run"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    listed = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(entry["id"], entry["runs"]) for entry in listed] == [("c2", 4)]
