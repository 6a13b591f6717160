"""Quarantine with evidence and an expiry (SPEC 18): ``farm-quarantine.toml`` through the real CLI,
every report format, the baseline gate, a detached sweep reported by a real worker, and
``farm quarantine suggest|review`` on a history built by real sweeps."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from farm.cli import main
from farm.quarantine.entries import Entry, EntryIndex, parse_entries
from farm.reports import parse_json_report

AGENT = f"py:{Path(__file__).resolve().parents[1] / 'agents' / 'quality.py'}:quality"
FUTURE, PAST = "2099-12-31", "2020-01-01"


def farm(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def write_suite(suite: Path, quality: dict[str, float]) -> Path:
    """A case per id, answered right with its ``quality`` (``tests/agents/quality.py``)."""
    lines = [{"id": cid, "input": cid, "expected": "yes", "metadata": {"quality": q}} for cid, q in quality.items()]
    suite.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return suite


def project(root: Path, *, quality: dict[str, float], until: str | None = FUTURE, package: bool = True) -> Path:
    """A project: package.yao, tests/suite.jsonl with a case per quality, and a quarantine file
    for case ``flaky`` when ``until`` is given. Returns the suite."""
    (root / "tests").mkdir(parents=True)
    if package:
        (root / "package.yao").write_text(json.dumps({"type": "python", "entry": "a.py:f"}))
    suite = write_suite(root / "tests" / "suite.jsonl", quality)
    if until is not None:
        (root / "farm-quarantine.toml").write_text(
            f'[[quarantine]]\ncase = "fla*"\nowner = "ana"\nreason = "upstream model drift"\nuntil = {until}\n')
    return suite


def sweep(suite: Path, out: Path, *extra: str) -> Result:
    return farm("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", "10", "--no-history",
                "-o", str(out / "r.json"), "-o", str(out / "r.xml"), "-o", str(out / "r.md"),
                "-o", str(out / "r.html"), *extra)


def test_a_quarantined_flaky_case_runs_is_marked_everywhere_and_does_not_gate(tmp_path: Path) -> None:
    suite = project(tmp_path / "p", quality={"flaky": 0.6, "solid": 1.0})
    result = sweep(suite, tmp_path)
    assert result.exit_code == 0, result.output
    assert "case flaky (failed, 60%): quarantined (ana: upstream model drift, until 2099-12-31)" in result.output
    report = parse_json_report((tmp_path / "r.json").read_text())
    flaky = next(c for c in report.results if c.id == "flaky")
    assert flaky.runs == 10 and flaky.passed == 6 and not flaky.case_passed  # it ran, and is reported
    assert flaky.quarantine is not None
    assert {k: flaky.quarantine[k] for k in ("case", "owner", "until", "status", "line")} == {
        "case": "fla*", "owner": "ana", "until": FUTURE, "status": "active", "line": 1}
    assert next(c for c in report.results if c.id == "solid").quarantine is None
    junit = (tmp_path / "r.xml").read_text()
    assert ('<skipped message="quarantined (ana: upstream model drift, until 2099-12-31): 6 of 10 runs passed, '
            '10 required, pass rate 60%') in junit
    assert "<failure" not in junit and 'failures="0"' in junit
    assert "**quarantined (ana: upstream model drift, until 2099-12-31)**" in (tmp_path / "r.md").read_text()
    html = (tmp_path / "r.html").read_text()
    assert '"quarantine":{' in html.replace(" ", "") and "quarantineBadge" in html


def test_a_quarantined_case_does_not_count_against_the_overall_gate(tmp_path: Path) -> None:
    suite = project(tmp_path / "p", quality={"flaky": 0.2, "solid": 1.0})
    result = sweep(suite, tmp_path, "--min-overall-pass-rate", "90%")
    assert result.exit_code == 0, result.output
    (tmp_path / "p" / "farm-quarantine.toml").unlink()
    assert sweep(suite, tmp_path, "--min-overall-pass-rate", "90%", "--min-pass-rate", "0").exit_code == 1


def test_a_quarantine_past_its_date_gates_again_and_says_it_expired(tmp_path: Path) -> None:
    suite = project(tmp_path / "p", quality={"flaky": 0.6}, until=PAST)
    result = sweep(suite, tmp_path)
    assert result.exit_code == 1, result.output
    assert "case flaky (failed, 60%): quarantine expired (ana: upstream model drift, until 2020-01-01)" in result.output
    report = parse_json_report((tmp_path / "r.json").read_text())
    assert report.results[0].quarantine is not None and report.results[0].quarantine["status"] == "expired"
    junit = (tmp_path / "r.xml").read_text()
    assert "<failure" in junit and "<skipped" not in junit


def test_each_project_uses_its_own_file_and_the_flag_applies_to_all(tmp_path: Path) -> None:
    project(tmp_path / "all" / "one", quality={"flaky-one": 0.6})
    project(tmp_path / "all" / "two", quality={"flaky-two": 0.6}, until=None)  # no file: gates
    result = farm("test", "--no-progress", "-i", str(tmp_path / "all"), "-n", AGENT, "--runs", "10",
                  "--no-history", "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 1, result.output
    marks = {c.id: c.quarantine for c in parse_json_report((tmp_path / "r.json").read_text()).results}
    assert marks["flaky-one"] is not None and marks["flaky-two"] is None
    given = tmp_path / "q.toml"
    given.write_text(f'[[quarantine]]\ncase = "flaky"\nowner = "bo"\nuntil = "{FUTURE}"\n')
    result = farm("test", "--no-progress", "-i", str(tmp_path / "all"), "-n", AGENT, "--runs", "10",
                  "--no-history", "-o", str(tmp_path / "r.json"), "--quarantine", str(given))
    assert result.exit_code == 0, result.output
    marks = {c.id: c.quarantine for c in parse_json_report((tmp_path / "r.json").read_text()).results}
    assert all(m is not None and m["owner"] == "bo" for m in marks.values())


@pytest.mark.parametrize(("text", "problem"), [
    ('[[quarantine]]\ncase = "a"\nowner = "x"\nuntil = 2099-01-01\n\n[[quarantine]]\ncase = "b"\nuntil = 2099-01-01\n',
     ":6: entry has no 'owner'"),
    ('[[quarantine]]\ncase = "a"\nowner = "x"\nuntil = 2099-01-01\n[[quarantine]]\ncase = "b"\nowner = "x"\n'
     'until = 2099-01-01\nticket = 7\n', ":9: unknown key 'ticket'"),
    ('# why\n[[quarantine]]\ncase = "a"\nowner = "x"\nuntil = "next friday"\n',
     ":5: until 'next friday' is not a date (YYYY-MM-DD)"),
    ('[[quarantine]]\ncase = "a"\nowner = "x"\n', ":1: entry has no 'until'"),
    ('[[quarantine]]\ncase = "a"\nowner = "x"\nuntil = 2099-01-01\n\n[other]\nx = 1\n',
     ":6: unknown table or key 'other'"),
])
def test_a_bad_entry_is_exit_2_naming_its_line_and_nothing_runs(tmp_path: Path, text: str, problem: str) -> None:
    suite = project(tmp_path / "p", quality={"flaky": 0.6}, until=None)
    (tmp_path / "p" / "farm-quarantine.toml").write_text(text)
    calls = tmp_path / "calls.txt"
    result = farm("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--no-history",
                  "-o", str(tmp_path / "r.json"), env={"FARM_TEST_CALLS": str(calls)})
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'p' / 'farm-quarantine.toml'}{problem}" in result.output
    assert not calls.exists() and not (tmp_path / "r.json").exists()


def test_entries_accept_string_and_toml_dates() -> None:
    entries = parse_entries('[[quarantine]]\ncase="a"\nowner="x"\nuntil="2026-01-31"\n'
                            '[[quarantine]]\ncase="b*"\nowner="y"\nreason="r"\nuntil=2026-02-01\n', Path("q.toml"))
    assert [(e.case, e.until, e.line) for e in entries] == [("a", "2026-01-31", 1), ("b*", "2026-02-01", 5)]
    assert entries[1].matches("b-1") and not entries[1].matches("ab") and entries[0].matches("xay")


def test_a_star_quarantines_every_case_and_says_so_in_the_summary_and_the_review(tmp_path: Path) -> None:
    suite = project(tmp_path / "p", quality={"flaky": 0.6, "dead": 0.0}, until=None)
    quarantine = tmp_path / "p" / "farm-quarantine.toml"
    quarantine.write_text(f'[[quarantine]]\ncase = "*"\nowner = "ana"\nuntil = {FUTURE}\n')
    result = sweep(suite, tmp_path)
    assert result.exit_code == 0, result.output  # a quarantine still holds: it is said, not refused
    assert "every case is quarantined" in result.output
    reviewed = farm("quarantine", "review", str(tmp_path / "p"), "--history", f"sqlite:///{tmp_path / 'h.sqlite'}")
    assert reviewed.exit_code == 0 and "every case is quarantined" in reviewed.output, reviewed.output
    # A pattern that happens to match every recorded case: the review says it from the history.
    url, root = _history(tmp_path / "h", [{"flaky-a": 0.6, "flaky-b": 0.5}])
    (root / "farm-quarantine.toml").write_text(f'[[quarantine]]\ncase = "flaky"\nowner = "ana"\nuntil = {FUTURE}\n')
    document = json.loads(farm("quarantine", "review", str(root), "--history", url, "--json").output)
    assert document["every_case_quarantined"] is True
    (root / "farm-quarantine.toml").write_text(f'[[quarantine]]\ncase = "flaky-a"\nowner = "ana"\nuntil = {FUTURE}\n')
    document = json.loads(farm("quarantine", "review", str(root), "--history", url, "--json").output)
    assert document["every_case_quarantined"] is False
    # One case left to gate: no such line.
    quarantine.write_text(f'[[quarantine]]\ncase = "fla*"\nowner = "ana"\nuntil = {FUTURE}\n')
    assert "every case is quarantined" not in sweep(suite, tmp_path).output


def test_a_quarantine_file_not_in_utf8_is_exit_2_naming_it(tmp_path: Path) -> None:
    suite = project(tmp_path / "p", quality={"flaky": 0.6}, until=None)
    quarantine = tmp_path / "p" / "farm-quarantine.toml"
    quarantine.write_bytes(b'[[quarantine]]\ncase = "caf\xe9"\nowner = "x"\nuntil = 2099-01-01\n')
    calls = tmp_path / "calls.txt"
    for args in (("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--no-history"),
                 ("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--no-history", "--quarantine",
                  str(quarantine)),
                 ("quarantine", "review", str(tmp_path / "p"), "--history", f"sqlite:///{tmp_path / 'h.sqlite'}")):
        result = CliRunner().invoke(main, list(args), env={"FARM_TEST_CALLS": str(calls)})
        assert result.exit_code == 2, (args, result.output, result.exception)
        assert f"{quarantine}: not UTF-8 text (byte 27)" in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not calls.exists()


def test_the_entry_index_matches_exactly_as_each_entry_does() -> None:
    """The index that finds a case's entries without trying each one (100,000 entries: 52 s tried
    one by one) agrees with ``Entry.matches`` and keeps the file's order (the first entry applies)."""
    patterns = ["a", "ab", "b", "abc", "*", "a*", "*c", "?b*", "[ab]c", "x[!a]*", "ca", "", "a?c", "[", "*b*",
                "abcabc", "c"]
    entries = [Entry(case=p, owner="o", reason="", until=FUTURE, file="q.toml", line=i + 1)
               for i, p in enumerate(patterns)]
    index = EntryIndex(entries)
    ids = ["", "a", "b", "c", "ab", "abc", "bc", "cab", "xbc", "xac", "[", "abcabc", "aXc", "bb", "zzz", "ca"]
    for case_id in ids:
        expected = [e for e in entries if e.matches(case_id)]
        assert index.matching(case_id) == expected, case_id
        assert index.first(case_id) == (expected[0] if expected else None)


def test_a_quarantined_regression_does_not_gate_against_the_baseline(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    suite = project(tmp_path / "p", quality={"flaky": 1.0, "solid": 1.0})
    base = farm("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", "20", "--history", url)
    assert base.exit_code == 0, base.output
    write_suite(suite, {"flaky": 0.4, "solid": 1.0})
    head = farm("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", "20", "--history", url,
                "--baseline", "last")
    assert head.exit_code == 0, head.output
    assert "regressed: flaky" in head.output and "quarantined" in head.output
    (tmp_path / "p" / "farm-quarantine.toml").unlink()
    again = farm("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", "20", "--history", url,
                 "--baseline", "last~1")
    assert again.exit_code == 1, again.output


# ------------------------------------------------------------------ suggest and review, on real sweeps


def _history(tmp_path: Path, qualities: list[dict[str, float]]) -> tuple[str, Path]:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    suite = project(tmp_path / "p", quality=qualities[0], until=None)
    for quality in qualities:
        write_suite(suite, quality)
        result = farm("test", "--no-progress", "-i", str(suite), "-n", AGENT, "--runs", "10", "--history", url,
                      "--tag", "kind=nightly")
        assert result.exit_code in (0, 1), result.output
    return url, tmp_path / "p"


def test_suggest_lists_the_cases_flaky_over_the_last_sweeps(tmp_path: Path) -> None:
    url, _ = _history(tmp_path, [{"wobbly": 0.7, "solid": 1.0, "dead": 0.0, "was": 0.5}] * 1 +
                      [{"wobbly": 0.7, "solid": 1.0, "dead": 0.0, "was": 1.0}] * 3)
    result = farm("quarantine", "suggest", "--history", url, "--last", "3", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["sweeps"] == 3
    assert [(s["case_id"], s["runs"], s["passed"]) for s in document["suggested"]] == [("wobbly", 30, 21)]
    wide = farm("quarantine", "suggest", "--history", url, "--last", "4", "--tag", "kind=nightly")
    assert wide.exit_code == 0, wide.output
    assert "2 cases flaky over the last 4 sweeps" in wide.output and "  was: 35/40" in wide.output
    assert farm("quarantine", "suggest", "--history", url, "--last", "0").exit_code == 2
    # the TOML it prints pastes as it is: read back, its entries name exactly the suggested cases
    import tomllib

    from farm.quarantine.entries import read_entries

    pasted = wide.output[wide.output.index("[[quarantine]]"):]
    assert len(tomllib.loads(pasted)["quarantine"]) == 2
    (tmp_path / "farm-quarantine.toml").write_text(pasted)
    entries = read_entries(tmp_path / "farm-quarantine.toml")
    assert [e.owner for e in entries] == ["set-me", "set-me"]
    for case_id in ("wobbly", "was", "wobbly2", "xwas"):
        named = [e for e in entries if e.matches(case_id)]
        assert len(named) == (1 if case_id in ("wobbly", "was") else 0), case_id  # exactly, not as a substring


def test_review_lists_recovered_expired_and_unmatched_entries(tmp_path: Path) -> None:
    url, root = _history(tmp_path, [{"wobbly": 0.6, "healed": 0.5}] + [{"wobbly": 0.6, "healed": 1.0}] * 3)
    (root / "farm-quarantine.toml").write_text(
        '[[quarantine]]\ncase = "wobbly"\nowner = "a"\nuntil = 2099-01-01\n'
        '[[quarantine]]\ncase = "healed"\nowner = "b"\nuntil = 2099-01-01\n'
        '[[quarantine]]\ncase = "gone-*"\nowner = "c"\nuntil = 2099-01-01\n'
        '[[quarantine]]\ncase = "wob"\nowner = "d"\nuntil = 2020-01-01\n')
    result = farm("quarantine", "review", str(root / "tests"), "--history", url, "--last", "3", "--json")
    assert result.exit_code == 0, result.output
    found = {r["entry"]["case"]: r["findings"] for r in json.loads(result.output)["review"]}
    assert found == {"healed": ["recovered"], "gone-*": ["names no case"], "wob": ["expired"]}
    text = farm("quarantine", "review", "--quarantine", str(root / "farm-quarantine.toml"), "--history", url,
                "--last", "3")
    assert "3 of 4 entries can go" in text.output and ":5 case 'healed' (b, until 2099-01-01): recovered" in text.output


def test_suggest_and_review_with_no_history_create_none(tmp_path: Path) -> None:
    """Reads: neither the default history (nor its data directory) nor a --history file is created."""
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    env = {"FARM_DATA_DIR": str(data)}
    suggested = farm("quarantine", "suggest", env=env)
    assert suggested.exit_code == 0 and "0 cases flaky over the last 0 sweeps" in suggested.output
    root = tmp_path / "p"
    project(root, quality={"flaky": 0.6})
    reviewed = farm("quarantine", "review", str(root), "--history", f"sqlite:///{elsewhere / 'h.sqlite'}", env=env)
    assert reviewed.exit_code == 0 and "1 of 1 entries can go (last 0 sweeps)" in reviewed.output
    assert "names no case" in reviewed.output
    assert not data.exists() and not elsewhere.exists()


# ------------------------------------------------------------------ a detached sweep, reported by a worker


@pytest.mark.slow
@pytest.mark.redis
def test_a_detached_sweep_carries_the_entries_to_the_worker(tmp_path: Path, farm_worker: Any, farm_cli: Any) -> None:
    suite = project(tmp_path / "p", quality={"flaky": 0.6, "solid": 1.0})
    farm_worker(queue="quarantine")
    sent = farm_cli.run("test", "-i", str(suite), "-n", AGENT, "--runs", "10", "--queue", "quarantine",
                        "--detach", "--no-history")
    assert sent.returncode == 0, sent.stderr
    sweep_id = sent.stdout.strip().splitlines()[-1]
    deadline = time.monotonic() + 120
    while True:
        got = farm_cli.run("results", sweep_id, "-o", str(tmp_path / "r.json"))
        if got.returncode != 3 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert got.returncode == 0, got.stderr
    report = parse_json_report((tmp_path / "r.json").read_text())
    flaky = next(c for c in report.results if c.id == "flaky")
    assert flaky.quarantine is not None and flaky.quarantine["status"] == "active" and not flaky.case_passed


@pytest.mark.browser
def test_the_html_report_shows_the_badge_in_chromium(tmp_path: Path) -> None:
    from tests.support.browser_fixtures import Opened, headless_chromium

    suite = project(tmp_path / "p", quality={"flaky": 0.6, "solid": 1.0})
    assert sweep(suite, tmp_path).exit_code == 0
    with headless_chromium() as browser:
        opened = Opened(browser, tmp_path / "r.html")
        try:
            badge = opened.page.locator("#rows tr.case-row .b-quarantined")
            assert badge.count() == 1 and badge.first.text_content() == "quarantined"
            row = opened.page.locator("#rows tr.case-row", has=opened.page.locator(".b-quarantined"))
            assert "flaky" in (row.text_content() or "")
            assert "ana: upstream model drift, until 2099-12-31" in (row.text_content() or "")
            assert opened.problems == [] and opened.blocked == []
        finally:
            opened.context.close()


def test_a_quarantined_regression_does_not_make_the_nightly_regress(tmp_path: Path) -> None:
    from farm.history.nightly import NightlySettings, run_nightly
    from farm.history.store import HistoryStore
    from farm.models.quarantine import mark_quarantined
    from tests.history.test_history_nightly import nightly_report

    store = HistoryStore.open(f"sqlite:///{tmp_path / 'h.sqlite'}")
    try:
        run_nightly(store, nightly_report("n1", 1, 20), NightlySettings())
        store.set_baseline("nightly", "n1")  # n3 is compared with n1 too
        held = nightly_report("n2", 2, 4)
        mark_quarantined(held.results, {"a": {"case": "a", "owner": "ana", "reason": "", "until": FUTURE}})
        assert not run_nightly(store, held, NightlySettings()).regressed
        expired = nightly_report("n3", 3, 4)
        mark_quarantined(expired.results, {"a": {"case": "a", "owner": "ana", "reason": "", "until": PAST}})
        assert run_nightly(store, expired, NightlySettings()).regressed
    finally:
        store.close()


def test_a_typo_in_an_entrys_case_is_warned_at_farm_test_time(tmp_path: Path) -> None:
    suite = project(tmp_path / "p", quality={"wobbly": 1.0, "steady": 1.0}, until=None)
    (tmp_path / "p" / "farm-quarantine.toml").write_text(
        '[[quarantine]]\ncase = "wobly"\nowner = "ana"\nuntil = 2099-12-31\n'
        '[[quarantine]]\ncase = "gone-*"\nowner = "bo"\nuntil = 2099-12-31\n'
        '[[quarantine]]\ncase = "zzz-elsewhere"\nowner = "cy"\nuntil = 2099-12-31\n')
    result = sweep(suite, tmp_path)
    assert result.exit_code == 0, result.output
    assert (f"{tmp_path / 'p' / 'farm-quarantine.toml'}:1: quarantine case 'wobly' names no case of this sweep; "
            "did you mean 'wobbly'?") in result.output
    assert "gone-*" not in result.output and "zzz-elsewhere" not in result.output  # no near id: not a typo
