"""Batch (`b`): alike means the same task, the same tool and the same shape of arguments; a row
shows its run, its age and the whole request; a request too long to show whole is never in the
batch; the audit keeps exactly the row that was shown. Pilot tests on the real engine (commands
really run in the workspace), and the engine's rules of likeness on their own."""

from __future__ import annotations

from pathlib import Path

from engine.kernel.clock import FakeClock
from engine.escalation.batch import MAX_REQUEST_TEXT, alike, request_text, shape
from engine.kernel.model import Option, Origin, Reason, ResolvedBy
from rules import load_rules
from rules.book import RuleBook
from tests.escalation.e2e_support import TOOL_AGENT
from tests.tui.helpers import SIZE, make_app, make_session, pending, wait_until
from tui.screens.batch import BatchScreen
from tui.session import RunRequest

HIDDEN = "; echo HIDDEN-COMMAND-RAN > hidden.txt"
PADDED = "echo release-notes-" + "a" * 600 + HIDDEN  # far past any one line of the list
TAIL = "; echo TAIL-SHOWN > tail.txt"
LONGISH = "echo changelog-" + "b" * 200 + TAIL  # past the old 160-character cut, within the limit

SCRIPT = f"""\
agents:
  helper:
    - tool: run_command
      args: {{command: "echo short > short.txt"}}
      when: "short"
    - tool: run_command
      args: {{command: "{LONGISH}"}}
      when: "longish"
    - tool: run_command
      args: {{command: "{PADDED}"}}
      when: "padded"
    - "done"
"""

RULES = """\
escalationRules:
  taskOverrides:
    deploy:
      requireConfirmation: true
    build:
      requireConfirmation: true
"""


def _workspace(tmp: Path) -> tuple[list[Path], Path, Path]:
    flows = []
    for task in ("deploy", "build"):
        sr = tmp / f"{task}.sr"
        sr.write_text(TOOL_AGENT.replace("builtin streetrace.fs", "builtin streetrace.cli"))
        sr.with_suffix(".yaml").write_text(SCRIPT)
        flows.append(sr)
    rules = tmp / "rules.yaml"
    rules.write_text(RULES)
    ws = tmp / "ws"
    ws.mkdir()
    return flows, rules, ws


async def test_a_batch_approves_only_what_its_rows_show_whole_and_the_audit_keeps_each_row(tmp_path) -> None:
    flows, rules, ws = _workspace(tmp_path)
    session = make_session(flows, rules=load_rules(rules), workspace=ws, rule_book=RuleBook(explicit=rules))
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        deploy, build = session.workflows
        runs = {word: app.start(deploy, RunRequest(None, word)) for word in ("short", "longish", "padded")}
        await wait_until(pilot, lambda: len(session.pending()) == 3, 60, "three pending decisions")
        other_task = app.start(build, RunRequest(None, "short"))  # raised last: the pane shows one of deploy's
        await wait_until(pilot, lambda: len(session.pending()) == 4, 60, "four pending decisions")
        session.clock.advance(95)  # the rows' ages
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, BatchScreen), 60, "the batch preview")
        screen = app.screen
        rows = list(screen.rows.values())
        by_command = {row.request: row for row in rows}
        # Alike: deploy's two shown whole; not build's (another task), not the padded one (too long).
        assert set(by_command) == {'run_command({"command": "echo short > short.txt"})',
                                   f'run_command({{"command": "{LONGISH}"}})'}
        assert len(screen.query_one("#batch-list").selected) == 2
        assert "1 alike not in this batch" in str(screen.query_one("#batch-note").render())
        listed = screen.query_one("#batch-list")
        drawn = "".join(listed.render_line(y).text for y in range(listed.size.height)).replace(" ", "")
        assert (LONGISH + '"})').replace(" ", "") in drawn.replace("▎", "").replace("▊", "")  # on screen, whole
        for word, command in (("short", "echo short > short.txt"), ("longish", LONGISH)):
            row = by_command[f'run_command({{"command": "{command}"}})']
            assert row.shown.startswith(f"run {runs[word].id} · 1:35 ago · task deploy · helper\n")
            assert row.shown.endswith(row.request)  # the whole request, its tail included
        await pilot.press("a")
        await wait_until(pilot, lambda: runs["short"].finished_at and runs["longish"].finished_at, 60, "two runs")

        assert (ws / "short.txt").is_file() and (ws / "tail.txt").is_file()
        assert not (ws / "hidden.txt").exists()  # the padded command did not run
        waiting = {p.escalation.run_id for p in session.pending()}
        assert waiting == {runs["padded"].id, other_task.id}  # both still wait for a person
        for word in ("short", "longish"):
            (record,) = [r for r in session.records.values() if r.pending.escalation.run_id == runs[word].id]
            decision = record.decision
            assert decision.resolved_by is ResolvedBy.HUMAN and decision.audit.via == "console batch of 2 (tool run_command)"
            assert decision.audit.shown == by_command[request_text(record.pending)].shown  # exactly the row


def _approval(clock, task: str, args: object, tool: str = "run_command"):
    p = pending(clock, task=task, question=f"Allow helper to call the tool {tool}?", context="", timeout=None,
                options=(Option("approve", "Approve"), Option("deny", "Deny")), origin=Origin.TOOL_APPROVAL,
                reason=Reason.SECURITY_CONCERN, allow_agent_decision=False)
    p.extra.update({"tool": tool, "args": args})
    return p


def test_alike_is_the_same_task_tool_and_shape_of_arguments() -> None:
    clock = FakeClock(1000.0)
    current = _approval(clock, "deploy", {"command": "ls"})
    same = _approval(clock, "deploy", {"command": "rm -rf build"})
    others = [_approval(clock, "build", {"command": "ls"}),  # another task
              _approval(clock, "deploy", {"command": ["ls"]}),  # a list where a string was
              _approval(clock, "deploy", {"command": "ls", "cwd": "/"}),  # another key
              _approval(clock, "deploy", {"command": 1}),
              _approval(clock, "deploy", {"path": "ls"}),
              _approval(clock, "deploy", {"command": "ls"}, tool="write_file")]
    assert alike([current, same, *others], current) == [current, same]
    assert shape({"b": True, "a": 1.5, "c": None}) == (("a", "number"), ("b", "boolean"), ("c", "null"))
    assert shape(["x"]) == (("", "array"),)
    long = _approval(clock, "deploy", {"command": "x" * MAX_REQUEST_TEXT})
    assert alike([current, long], current) == [current, long]  # alike, but too long to be in a batch:
    screen = BatchScreen([current, long], clock.now())
    assert list(screen.rows) == [current.escalation.id] and screen.left_out == 1


def test_a_question_s_row_says_what_approving_answers() -> None:
    from tui.screens.batch import batch_row

    clock = FakeClock(1000.0)
    question = pending(clock, task="deploy", run_id="r9", question="Refactor to JWT?\nIt touches 5 files.")
    clock.advance(3)
    row = batch_row(question, clock.now())
    assert row.shown == ("run r9 · 3s ago · task deploy · " + question.escalation.agent
                         + "\nRefactor to JWT?\nIt touches 5 files.\napprove: Yes, use JWT (recommended)")
