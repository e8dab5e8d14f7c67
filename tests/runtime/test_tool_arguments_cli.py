"""A tool argument of another type never walks around the rules (issue 22, finding 3), as a user
meets it: `escalate run` in a workspace holding a folder a hostile command deletes, the rules
saying `rm -rf: deny`, and edited arguments given with `escalate answer --args`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli_here import escalate_here
from tests.durable.test_cli import default_database, escalate, start, wait_for_pending  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# The shell would run `str(list)`: `['"';touch BYPASSED;rm -r -f victimdir;#']`.
HOSTILE = "\"';touch BYPASSED;rm -r -f victimdir;#"

WORKFLOW = """\
tool sh = builtin streetrace.cli
prompt p: \"\"\"You run commands.\"\"\"
agent a:
    instruction p
    tools sh
flow main:
    return run agent a "go"
"""

RULES = """\
escalationRules:
  global:
    - {pattern: "rm -rf", action: deny}
"""

ASKING_RULES = RULES + """\
  taskOverrides:
    w:
      requireConfirmation: true
"""

REPLIES = """\
    - {text: "the model saw: invalid arguments", when: "invalid arguments"}
    - {text: "the model saw: refused by a rule", when: "denied by"}
    - "the command ran"
"""


def workspace(tmp: Path, first_call: dict, rules: str) -> None:
    (tmp / "w.sr").write_text(WORKFLOW)
    (tmp / "s.yaml").write_text(f"agents:\n  a:\n    - {json.dumps({'tool': 'run_command', 'args': first_call})}\n" + REPLIES)
    (tmp / "r.yaml").write_text(rules)
    (tmp / "victimdir").mkdir()
    (tmp / "victimdir" / "keep.txt").write_text("still here")


def events(tmp: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp / "e.jsonl").read_text().splitlines()]


def survived(tmp: Path) -> bool:
    return (tmp / "victimdir" / "keep.txt").read_text() == "still here" and not (tmp / "BYPASSED").exists()


def test_a_list_command_from_the_scripted_model_is_refused_before_the_rules(tmp_path: Path) -> None:
    workspace(tmp_path, {"command": [HOSTILE]}, RULES)
    done = escalate(tmp_path, "run", "w.sr", "--script", "s.yaml", "--rules", "r.yaml", "--events", "e.jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the model saw: invalid arguments\n"  # the refusal was the tool's result
    assert survived(tmp_path)
    assert "Traceback" not in done.stderr
    assert "run_command was refused, its arguments do not fit the tool's schema (argument 'command' must be a " \
           "string, not a list); nothing ran" in done.stderr
    seen = events(tmp_path)
    assert not [e for e in seen if e["type"] in ("tool_call", "human_escalation")]  # nobody was asked, nothing ran
    assert any(e["type"] == "log" and "must be a string, not a list" in e["message"] for e in seen)


def test_a_string_command_is_still_read_by_the_shell_analysis(tmp_path: Path) -> None:
    """The same words as a string: `rm -r -f` is `rm -rf`, the rule denies it."""
    workspace(tmp_path, {"command": "touch BYPASSED; rm -r -f victimdir"}, RULES)
    done = escalate(tmp_path, "run", "w.sr", "--script", "s.yaml", "--rules", "r.yaml", "--events", "e.jsonl")
    assert (done.returncode, done.stdout) == (0, "the model saw: refused by a rule\n"), done.stderr
    assert survived(tmp_path)


def test_edited_arguments_from_answer_are_checked_then_ruled(tmp_path: Path, default_database) -> None:
    workspace(tmp_path, {"command": "echo hello"}, ASKING_RULES)
    run = start(tmp_path, "run", "w.sr", "--script", "s.yaml", "--rules", "r.yaml", "--events", "e.jsonl", "--wait")
    try:
        row = wait_for_pending(tmp_path)
        assert row["payload"]["extra"] == {"tool": "run_command", "args": {"command": "echo hello"},
                                           "askedBy": "taskOverrides.w: requireConfirmation (r.yaml:6)"}
        # Answered from this process (tests/cli_here.py), another than the run's.
        bad = escalate_here("answer", row["id"], "--approve", "--args", json.dumps({"command": [HOSTILE]}), cwd=tmp_path)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        assert bad.stderr == f"{row['id']}: --args: run_command: argument 'command' must be a string, not a list\n"
        unknown = escalate_here("answer", row["id"], "--approve", "--args", json.dumps({"command": "ls", "shell": "bash"}),
                                cwd=tmp_path)
        assert unknown.returncode == 2 and "'shell' is not one of its arguments (command)" in unknown.stderr
        missing = escalate_here("answer", row["id"], "--approve", "--args", "{}", cwd=tmp_path)
        assert missing.returncode == 2 and "argument 'command' is missing" in missing.stderr
        assert escalate_here("runs", "--format", "json", cwd=tmp_path).stdout.count('"pending"') >= 1  # still undecided
        # A valid edit goes through the same rules as the model's call: `rm -r -f` is denied.
        ok = escalate_here("answer", row["id"], "--approve", "--args", json.dumps({"command": "rm -r -f victimdir"}), cwd=tmp_path)
        assert ok.returncode == 0, ok.stderr
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(30)
    assert (run.returncode, out) == (0, "the model saw: refused by a rule\n"), err
    assert survived(tmp_path)
    [call] = [e for e in events(tmp_path) if e["type"] == "tool_call"]
    assert call["verdict"] == "denied" and call["editedArgs"] == {"command": "rm -r -f victimdir"}


def test_a_decision_with_list_arguments_written_by_another_client_runs_nothing(tmp_path: Path, default_database) -> None:
    """An edit that no client checked (an older client, a hand-written row) meets the run's own check."""
    from engine.durable.database import Database
    from engine.durable.decisions import DecisionStore
    from engine.kernel.model import Decision, ResolvedBy, Response, ResponseType, escalation_digest

    workspace(tmp_path, {"command": "echo hello"}, ASKING_RULES)
    run = start(tmp_path, "run", "w.sr", "--script", "s.yaml", "--rules", "r.yaml", "--events", "e.jsonl", "--wait")
    try:
        row = wait_for_pending(tmp_path)
        db = Database(f"sqlite:///{tmp_path / '.escalate' / 'escalate.db'}")
        try:
            response = Response(ResponseType.OPTION, selected_option="approve", edited_args={"command": [HOSTILE]})
            store = DecisionStore(db)
            [seen] = store.still_pending([row["id"]])  # the other client saw the request as it is
            store.decide(Decision(row["id"], response, ResolvedBy.HUMAN, time.time(), digest=escalation_digest(seen)))
        finally:
            db.close()
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(30)
    assert (run.returncode, out) == (0, "the model saw: invalid arguments\n"), err
    assert survived(tmp_path) and "Traceback" not in err
    [call] = [e for e in events(tmp_path) if e["type"] == "tool_call"]
    assert call["verdict"] == "denied"
