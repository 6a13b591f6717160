"""Judge checks (``agent``, ``gist``/``not_gist``) and the strict reading of a judge's answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from farm.checks import evaluate_turn, parse_verdict
from farm.checks.base import CheckContext, Judge, JudgeVerdict
from farm.checks.spec import parse_assertions, parse_response
from farm.errors import AgentResolutionError
from farm.models import CheckOutcome, Reply, Turn

# --------------------------------------------------------------------------- parse_verdict


@pytest.mark.parametrize(
    ("answer", "verdict", "reason"),
    [
        ("PASS", "pass", ""),
        ("pass", "pass", ""),
        ("pass.", "pass", ""),
        ("Pass - mentions the Beatles", "pass", "mentions the Beatles"),
        ("FAIL: the answer is about the Stones", "fail", "the answer is about the Stones"),
        ("Verdict: fail", "fail", ""),
        ("verdict - PASS", "pass", ""),
        ("**PASS**\nThe answer names them.", "pass", "The answer names them."),
        ("  fail  ", "fail", ""),
        ('{"passed": true, "reason": "ok"}', "pass", "ok"),
        ('{"passed": false, "reason": "no"}', "fail", "no"),
        ('```json\n{"passed": false, "reason": "wrapped"}\n```', "fail", "wrapped"),
        ('{"passed": false}', "fail", ""),
    ],
)
def test_verdicts(answer: str, verdict: str, reason: str) -> None:
    assert parse_verdict(answer) == JudgeVerdict(verdict, reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "answer",
    [
        "passed",  # only the whole words pass/fail count
        "Failed.",
        "passing",
        "I can't say",
        "This does not pass",  # the verdict must come first: a later negation never flips it
        "The verdict is pass",
        "",
        "   ",
        '{"passed": "yes"}',
        '{"passed": 1}',
        '{"verdict": "pass"}',
        "{not json",
        "[true]",
    ],
)
def test_equivocal_answers(answer: str) -> None:
    assert parse_verdict(answer).verdict == "equivocal"


def test_equivocal_reason_quotes_the_answer() -> None:
    assert parse_verdict("I can't say").reason == 'the judge did not answer pass or fail: "I can\'t say"'


# ------------------------------------------------------------------- a real in-test judge


class ScriptedJudge:
    """A Judge that answers from a table (criterion → raw text), as a connector would."""

    def __init__(self, answers: dict[str, str], name: str = "default") -> None:
        self.answers = answers
        self.name = name
        self.calls: list[dict[str, Any]] = []

    async def judge(self, *, criterion: str, actual: Any, input: Any) -> JudgeVerdict:
        self.calls.append({"criterion": criterion, "actual": actual, "input": input})
        return parse_verdict(self.answers.get(criterion, "I can't say"))


class BrokenJudge:
    async def judge(self, *, criterion: str, actual: Any, input: Any) -> JudgeVerdict:
        raise ConnectionError("connector unreachable")


def resolver(judges: dict[str | None, Judge]) -> Any:
    def resolve(use: str | None) -> Judge:
        if use not in judges:
            raise AgentResolutionError(f"no connector {use!r}")
        return judges[use]

    return resolve


def evaluate(
    assertions: Any = None, response: Any = None, reply: Reply | None = None, ctx: CheckContext | None = None
) -> list[CheckOutcome]:
    yao, issues = parse_assertions(assertions) if assertions is not None else ([], [])
    stock, more = parse_response(response, "response") if response is not None else ([], [])
    assert issues == [] and more == []
    turn = Turn(messages=[], assertions=yao, stock_tests=stock)
    return asyncio.run(evaluate_turn(turn, reply or Reply(text="The Beatles did."), ctx or CheckContext(), 1))


def test_agent_check_passes_and_keeps_verdict_and_reason() -> None:
    judge = ScriptedJudge({"names the band": "PASS: it says the Beatles"})
    ctx = CheckContext(input="Who did it?", judges=resolver({None: judge}))
    [outcome] = evaluate({"type": "agent", "value": "names the band"}, ctx=ctx)
    assert outcome.passed
    assert (outcome.verdict, outcome.reason) == ("pass", "it says the Beatles")
    assert judge.calls == [{"criterion": "names the band", "actual": "The Beatles did.", "input": "Who did it?"}]


def test_agent_check_uses_the_named_judge_and_json_criteria() -> None:
    strict = ScriptedJudge({'{"must": "be polite"}': '{"passed": false, "reason": "rude"}'})
    ctx = CheckContext(judges=resolver({"openai.strict": strict}))
    [outcome] = evaluate({"type": "agent", "use": "openai.strict", "value": {"must": "be polite"}}, ctx=ctx)
    assert not outcome.passed
    assert outcome.message == "the judge says fail: rude"
    assert outcome.verdict == "fail"


def test_negated_agent_check_passes_on_fail_but_never_on_equivocation() -> None:
    judge = ScriptedJudge({"is rude": "fail"})
    ctx = CheckContext(judges=resolver({None: judge}))
    [ok] = evaluate({"type": "agent", "value": "is rude", "negate": True}, ctx=ctx)
    assert ok.passed
    [unsure] = evaluate({"type": "agent", "value": "unknown criterion", "negate": True}, ctx=ctx)
    assert not unsure.passed
    assert unsure.verdict == "equivocal"
    assert unsure.message.startswith("the judge equivocated: the judge did not answer pass or fail")


def test_no_judge_configured() -> None:
    [outcome] = evaluate({"type": "agent", "value": "x"})
    assert not outcome.passed
    assert "--judge" in outcome.message
    [gist] = evaluate(response={"text": {"gist": "x"}})
    assert not gist.passed and "--judge" in gist.message


def test_judge_errors_fail_the_check() -> None:
    ctx = CheckContext(judges=resolver({None: BrokenJudge()}))
    [outcome] = evaluate({"type": "agent", "value": "x", "negate": True}, ctx=ctx)
    assert not outcome.passed
    assert outcome.message == "judge failed: ConnectionError: connector unreachable"
    [unknown] = evaluate({"type": "agent", "use": "nope", "value": "x"}, ctx=ctx)
    assert unknown.message == "cannot get judge 'nope': AgentResolutionError: no connector 'nope'"


def test_gist_and_not_gist() -> None:
    judge = ScriptedJudge({"about music": "pass", "about cooking": "fail - it is about music"})
    ctx = CheckContext(judges=resolver({None: judge}))
    found = evaluate(
        response={
            "text": {"gist": "about music", "not_gist": "about cooking"},
            "structure": {"answer": {"gist": ["about music", "about cooking"]}},
        },
        reply=Reply(text="A song by the Beatles", structure={"answer": {"band": "Beatles"}}),
        ctx=ctx,
    )
    assert [(o.name, o.passed, o.verdict) for o in found] == [
        ("text.gist", True, "pass"),
        ("text.not_gist", True, "fail"),
        ("structure.answer.gist", False, "fail"),
    ]
    assert found[2].message == "the judge says fail for 'about cooking': it is about music"
    assert judge.calls[-1]["actual"] == {"band": "Beatles"}  # non-strings reach the judge as data


def test_not_gist_fails_on_equivocation() -> None:
    ctx = CheckContext(judges=resolver({None: ScriptedJudge({})}))
    [outcome] = evaluate(response={"text": {"not_gist": "anything"}}, ctx=ctx)
    assert not outcome.passed
    assert outcome.verdict == "equivocal"
    assert outcome.message.startswith("the judge equivocated on 'anything'")


# ---------------------------------------------------------------------------- judges_needed


def test_judges_needed_names_each_judge_once_with_a_case_that_asks() -> None:
    from farm.checks import judges_needed
    from farm.models import Case, Message

    def case(case_id: str, assertions: Any = None, response: Any = None) -> Case:
        yao = parse_assertions(assertions)[0] if assertions is not None else []
        stock = parse_response(response, "response")[0] if response is not None else []
        turn = Turn(messages=[Message(role="user", content="hi")], assertions=yao, stock_tests=stock)
        return Case(id=case_id, format="yao", turns=[turn])

    plain = case("plain", [{"type": "contains", "value": "x"}], {"text": {"keywords": "x"}})
    cases = [
        plain,
        case("one", [{"type": "agent", "value": "polite", "use": "openai.judge"}, {"type": "agent", "value": "v"}]),
        case("two", [{"type": "agent", "value": "kind", "use": "openai.judge"}]),
        case("gist", None, {"text": {"not_gist": "rude"}}),
    ]
    assert {use: c.id for use, c in judges_needed(cases).items()} == {"openai.judge": "one", None: "one"}
    assert judges_needed([plain, cases[3]]) == {None: cases[3]}
    assert judges_needed([plain]) == {}
