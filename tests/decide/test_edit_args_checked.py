"""The console's `e` editor checks edited arguments against the tool's schema, then the rules
(issue 22, finding 3): an edit making `command` a list is refused with one line and nothing runs;
a valid edit that a rule denies is denied, as the model's own call would be."""

from __future__ import annotations

import json

from rules import load_rules
from tests.tui.helpers import SIZE, make_app, make_session, wait_until
from tui.screens.edit_args import EditArgsScreen
from tui.session import RunRequest

HOSTILE = "\"';touch BYPASSED;rm -r -f victimdir;#"

WORKFLOW = """\
streetrace v1

model main = anthropic/claude-sonnet-4

tool sh = builtin streetrace.cli

prompt p: \"\"\"You run commands.\"\"\"

agent helper:
    tools sh
    instruction p

flow main:
    $out = run agent helper $input
    return $out
"""

SCRIPT = """\
agents:
  helper:
    - tool: run_command
      args: {command: "echo hello > hello.txt"}
    - text: "refused"
      when: "denied"  # one wording for every denial (issue 27)
    - text: "invalid"
      when: "invalid arguments"
    - "ran"
"""

RULES = """\
escalationRules:
  global:
    - {pattern: "rm -rf", action: deny}
  taskOverrides:
    deploy:
      requireConfirmation: true
"""


def check_line(app) -> str:
    return str(app.screen.query_one("#edit-check").render())


async def test_an_edit_of_another_type_is_refused_and_a_denied_edit_is_denied(tmp_path) -> None:
    sr = tmp_path / "deploy.sr"
    sr.write_text(WORKFLOW)
    sr.with_suffix(".yaml").write_text(SCRIPT)
    (tmp_path / "rules.yaml").write_text(RULES)
    ws = tmp_path / "ws"
    (ws / "victimdir").mkdir(parents=True)
    (ws / "victimdir" / "keep.txt").write_text("still here")
    session = make_session([sr], rules=load_rules(tmp_path / "rules.yaml"), workspace=ws)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        run = app.start(session.workflows[0], RunRequest(None, "go"))
        await wait_until(pilot, lambda: len(session.pending()) == 1, 60, "the approval")

        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditArgsScreen), 60, "the editor")
        app.screen.query_one("#edit-args").text = json.dumps({"command": [HOSTILE]})
        await pilot.pause()
        assert "✗ run_command: argument 'command' must be a string, not a list" in check_line(app)
        await pilot.press("ctrl+s")  # refused: the editor stays, nothing is answered
        await pilot.pause()
        assert isinstance(app.screen, EditArgsScreen) and len(session.pending()) == 1
        app.screen.query_one("#edit-args").text = json.dumps({"command": "ls", "cwd": "/"})
        await pilot.pause()
        assert "'cwd' is not one of its arguments (command)" in check_line(app)

        # A valid edit meets the rules: `rm -r -f` is `rm -rf`, denied, even though approved.
        app.screen.query_one("#edit-args").text = json.dumps({"command": "rm -r -f victimdir"})
        await pilot.pause()
        assert "the rules refuse this call" in check_line(app)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: run.finished_at is not None, 60, "the run")
    assert run.result == "refused"
    assert (ws / "victimdir" / "keep.txt").read_text() == "still here" and not (ws / "BYPASSED").exists()
    assert not (ws / "hello.txt").exists()
