"""Real runs (ADK with the scripted model): an approval with edited arguments runs the tool with
them after the rules checked them again; a taught rule settles the requests already waiting."""

import asyncio
from pathlib import Path

from engine.kernel.model import Audit, Origin, ResolvedBy, Response, ResponseType
from engine.escalation.teaching import propose, teach
from engine.runtime.engine import RunStatus
from rules.model import Action
from rules.book import RuleBook
from tests.escalation.e2e_support import TOOL_AGENT, Harness

SCRIPT = """\
agents:
  helper:
    - tool: write_file
      args: {path: "RELEASED.txt", content: "v1.4.2"}
    - text: "refused"
      when: "on the edited arguments"
    - text: "denied"
      when: "denied"
    - "written"
"""

RULES = """\
escalationRules:
  global:
    - {pattern: "secret", action: deny}
  taskOverrides:
    deploy:
      requireConfirmation: true
    deploy-other:
      requireConfirmation: true
"""


async def _pending(h: Harness, count: int) -> list:
    for _ in range(3000):
        if len(h.broker.pending()) >= count:
            return h.broker.pending()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(h.broker.pending())} of {count} escalations raised")


async def test_an_edited_approval_runs_the_tool_with_the_edited_arguments(tmp_path) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start(task="deploy")
    [pending] = await _pending(h, 1)
    asked_by = pending.extra.pop("askedBy")  # why a person is asked: the override's switch, where it is set
    assert asked_by.startswith("taskOverrides.deploy: requireConfirmation (") and asked_by.endswith("rules.yaml:6)")
    assert pending.extra == {"tool": "write_file", "args": {"path": "RELEASED.txt", "content": "v1.4.2"}}
    edited = {"path": "STAGED.txt", "content": "v1.4.2 (staging)"}
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "approve", edited_args=edited), audit=Audit(via="test"))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "written"
    assert (h.workspace / "STAGED.txt").read_text() == "v1.4.2 (staging)"
    assert not (h.workspace / "RELEASED.txt").exists()
    [call] = h.events(handle, "tool_call")
    assert call["args"]["path"] == "RELEASED.txt" and call["editedArgs"] == edited and call["verdict"] == "confirmed"
    [decision] = h.events(handle, "decision")
    assert decision["editedArgs"] == edited and decision["via"] == "test"


async def test_an_edited_call_a_rule_denies_does_not_run(tmp_path) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start(task="deploy")
    [pending] = await _pending(h, 1)
    edited = {"path": "secret.txt", "content": "x"}
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "approve", edited_args=edited))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "refused"  # "... was denied by rule 'secret' (...), on the edited arguments"
    assert not (h.workspace / "secret.txt").exists() and not (h.workspace / "RELEASED.txt").exists()
    [call] = h.events(handle, "tool_call")
    assert call["verdict"] == "denied" and call["editedArgs"] == edited


async def test_a_taught_allow_releases_the_matching_waiting_requests(tmp_path: Path) -> None:
    rules_path = tmp_path / "rules.yaml"
    rules_path.write_text(RULES)
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    book = RuleBook(explicit=rules_path)
    h.engine.desk.set_rules(book.load())
    first, second = h.start(task="deploy"), h.start(task="deploy")
    other = h.start(task="deploy-other")  # same call, another task: not released
    pending = await _pending(h, 3)
    assert all(p.escalation.origin is Origin.TOOL_APPROVAL for p in pending)
    waiting_other = next(p for p in pending if p.escalation.task_id == "deploy-other")
    pending = [p for p in pending if p is not waiting_other]
    rule, released = teach(h.engine.desk, book, propose(pending[0], Action.ALLOW))
    assert rule.file == str(rules_path) and rule.taught
    assert sorted(d.escalation_id for d in released) == sorted(p.escalation.id for p in pending)
    for decision in released:
        assert decision.resolved_by is ResolvedBy.RULE and decision.audit.rule == rule.describe()
        assert decision.response.selected_option == "approve"
    for handle in (first, second):
        assert await h.finish(handle) is RunStatus.DONE and handle.result == "written"
    assert [p.escalation.id for p in h.broker.pending()] == [waiting_other.escalation.id]  # another task: still waits
    assert h.engine.desk.hits[(rule.file, rule.pattern.source, "allow")] == 2
    other.cancel()
    await asyncio.wait_for(other.wait(), 30)


def test_decide_many_wins_only_what_was_pending(tmp_path) -> None:
    from dataclasses import replace

    from engine.durable.database import Database
    from engine.durable.decisions import pending_to_json
    from tests.tui.helpers import FakeClock, pending

    def payload(esc_id: str) -> dict:  # rows are checked when read: a payload as escalate writes it
        made = pending(FakeClock(1.0))
        return pending_to_json(replace(made, escalation=replace(made.escalation, id=esc_id)))

    def said(who: str, n: int = 0) -> dict:
        return {"responseType": "text", "textResponse": f"{who} {n}", "resolvedBy": "human"}

    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        for n in range(3):
            db.add_escalation(f"e{n}", "r1", payload(f"e{n}"), 1.0, None, digest=f"d{n}")
        assert db.decide("e1", said("first"), "human", digest="d1").won
        db.withdraw("e2")
        results = db.decide_many([(f"e{n}", said("batch", n), "rule", 2.0, f"d{n}") for n in range(4)])
        assert [r.won for r in results] == [True, False, False, False]
        assert [r.status for r in results] == ["decided", "decided", "withdrawn", "unknown"]
        assert results[1].decision == said("first") and results[1].resolved_by == "human"
        assert db.get_escalation("e0")["decision"] == said("batch", 0)
    finally:
        db.close()
