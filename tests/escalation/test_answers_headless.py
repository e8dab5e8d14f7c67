import asyncio
from pathlib import Path

import pytest

from engine.escalation.answers import AnswersError, AnswersUnreadable, load_answers, parse_answers
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import FakeClock
from engine.escalation.desk import EscalationDesk
from engine.escalation.headless import AnswerMismatch, HeadlessResponder, waiting_message
from engine.kernel.model import OnTimeout, Option, Origin, Reason, ResolvedBy, ResponseType
from esc_helpers import make_escalation, make_pending

CONTRACT_EXAMPLE = """\
- responseType: option            # the 1st human escalation of the run gets this answer
  selectedOption: opt1
  additionalInstructions: "Keep the session cookie for one release"
- responseType: text              # the 2nd
  textResponse: "Ship it behind a flag"
- responseType: skip              # the 3rd
- responseType: agent_decide      # the 4th
"""


def test_contract_example_parses() -> None:
    answers = parse_answers(CONTRACT_EXAMPLE, "A.yaml")
    assert [a.response.response_type for a in answers] == [
        ResponseType.OPTION,
        ResponseType.TEXT,
        ResponseType.SKIP,
        ResponseType.AGENT_DECIDE,
    ]
    assert answers[0].response.selected_option == "opt1"
    assert answers[0].response.additional_instructions == "Keep the session cookie for one release"
    assert answers[1].response.text_response == "Ship it behind a flag"
    assert answers[1].where() == "A.yaml:4:3"
    assert parse_answers("", "A.yaml") == [] and parse_answers("[]", "A.yaml") == []


BAD = [
    ("responseType: skip\n", 1, 1, "the answers file must be a list, not a mapping"),
    ("- skip\n", 1, 3, "answer 1 must be a mapping, not the string 'skip'"),
    ("- {}\n", 1, 3, "answer 1: missing required key 'responseType'"),
    ("- responseType: skip\n- responseType: optoin\n", 2, 17, "unknown responseType 'optoin' (did you mean 'option'?)"),
    ("- responseType: option\n", 1, 3, "missing required key 'selectedOption'"),
    ("- responseType: text\n", 1, 3, "missing required key 'textResponse'"),
    ("- responseType: skip\n  textResponse: hi\n", 2, 3, "textResponse does not go with responseType skip"),
    ("- responseType: option\n  selectedOption: 2\n", 2, 19, "selectedOption must be a string, not the number 2"),
    ("- responseType: text\n  textResponse: [a]\n", 2, 17, "textResponse must be a string, not a list"),
    ("- responseType: skip\n  aditionalInstructions: x\n", 2, 3, "did you mean 'additionalInstructions'"),
    ("- responseType: skip\n  responseType: text\n", 2, 3, "duplicate key 'responseType'"),
    ("- responseType: [skip\n", 2, 1, "invalid YAML"),
    ("- responseType: true\n", 1, 17, "must be a string, not the boolean true"),
]


@pytest.mark.parametrize(("text", "line", "column", "fragment"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_malformed_answers_rejected_with_positions(text: str, line: int, column: int, fragment: str) -> None:
    with pytest.raises(AnswersError) as info:
        parse_answers(text, "A.yaml")
    assert (info.value.line, info.value.column) == (line, column), str(info.value)
    assert fragment in info.value.message
    assert str(info.value).startswith(f"A.yaml:{line}:{column}: ")


def test_unreadable_answers(tmp_path: Path) -> None:
    with pytest.raises(AnswersUnreadable):
        load_answers(tmp_path / "none.yaml")


async def test_nth_escalation_of_a_run_gets_nth_answer_then_defaults() -> None:
    clock = FakeClock()
    broker = EscalationBroker(clock)
    waiting = []
    responder = HeadlessResponder(broker, parse_answers(CONTRACT_EXAMPLE, "A.yaml"), on_waiting=waiting.append)
    got = []
    for n in range(4):
        got.append(await broker.ask(make_pending(run_id="A")))
    assert [d.response.response_type for d in got] == [
        ResponseType.OPTION,
        ResponseType.TEXT,
        ResponseType.SKIP,
        ResponseType.AGENT_DECIDE,
    ]
    assert all(d.resolved_by is ResolvedBy.ANSWERS_FILE for d in got)
    # another run starts from the first answer again
    other = await broker.ask(make_pending(run_id="B"))
    assert other.response.selected_option == "opt1"
    # used up: a deadline resolves at once as if passed ...
    timed = await broker.ask(make_pending(run_id="A", deadline=300, on_timeout=OnTimeout.STOP))
    assert timed.stops_task and timed.resolved_by is ResolvedBy.TIMEOUT_DEFAULT and clock.now() == 0
    # ... a tool approval is denied at once ...
    tool = make_pending(run_id="A", origin=Origin.TOOL_APPROVAL, options=(Option("approve", "A"), Option("deny", "D")))
    assert (await broker.ask(tool)).response.selected_option == "deny"
    # ... and one without a deadline waits: the runner is told
    pending = make_pending(run_id="A", allow_agent_decision=True)
    task = asyncio.create_task(broker.ask(pending))
    await asyncio.sleep(0)
    assert waiting == [pending] and responder.waiting == [pending] and not task.done()
    assert pending.escalation.id in waiting_message(pending) and "waiting on a human" in waiting_message(pending)
    task.cancel()
    responder.close()


async def test_answer_that_does_not_fit_fails_the_escalation_with_its_position() -> None:
    broker = EscalationBroker(FakeClock())
    HeadlessResponder(broker, parse_answers("- responseType: option\n  selectedOption: opt7\n", "A.yaml"))
    with pytest.raises(AnswerMismatch, match=r"A\.yaml:1:3: answer 1 does not fit.*opt7"):
        await broker.ask(make_pending())


async def test_headless_through_the_desk_with_default_rules() -> None:
    from rules import default_rules

    clock = FakeClock()
    broker = EscalationBroker(clock)
    desk = EscalationDesk(broker, default_rules(), clock)
    waiting = []
    HeadlessResponder(broker, [], on_waiting=waiting.append)
    cost = await desk.decide(make_escalation(reason=Reason.COST_WARNING, question="budget at 90%"))
    assert cost.response.response_type is ResponseType.AGENT_DECIDE and not cost.stops_task
    stop = await desk.decide(make_escalation(reason=Reason.UNCLEAR_REQUIREMENT, question="which one?"))
    assert stop.stops_task
    arch = asyncio.create_task(desk.decide(make_escalation(reason=Reason.ARCHITECTURE_DECISION, allow_agent_decision=True, timeout=120)))
    await asyncio.sleep(0)
    assert len(waiting) == 1 and not arch.done()
    arch.cancel()
    call = {"path": "x"}
    denied = await desk.settle_tool("r", "t", "a", "delete_file", call, desk.tool_verdict("t", "delete_file", call))
    assert denied.verdict == "denied"
