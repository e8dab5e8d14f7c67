"""The one table of response kinds (engine/kernel/responses.py): every answer's kind has a row,
and a new kind is a row (plus its `responseType`) that the whole path then knows: answers files,
validation, `escalate answer`'s flags, the database, the agent's message, the audit, the pane
and the log. The new kind is proved on a copy of the source with exactly those two files
changed, run as real processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.durable.database import Database
from engine.durable.decisions import DecisionStore
from engine.kernel.model import Escalation, Option, Origin, PendingEscalation, Reason, Response, ResponseType, TimeoutPolicy
from engine.kernel.responses import APPROVE, DENY, kind_of, kinds, wire_kinds

ROOT = Path(__file__).parents[2]


def _esc(origin: Origin = Origin.AGENT_TEXT, options: tuple[Option, ...] = ()) -> Escalation:
    return Escalation("e1", "t", "r", "a", Reason.OTHER, "Q?", options=options, origin=origin)


def test_every_response_type_has_one_row_and_every_row_its_own_flag_and_pane_line() -> None:
    assert sorted(k.response_type.value for k in wire_kinds()) == sorted(t.value for t in ResponseType)
    names = [k.name for k in kinds()]
    flags = [k.flag for k in kinds()]
    pane = [k.pane_key for k in kinds() if k.pane_key is not None]
    assert len(set(names)) == len(names) and len(set(flags)) == len(flags) and len(set(pane)) == len(pane)


@pytest.mark.parametrize(("origin", "response", "row", "approved"), [
    (Origin.TOOL_APPROVAL, Response(ResponseType.OPTION, selected_option=APPROVE), "approve", True),
    (Origin.TOOL_APPROVAL, Response(ResponseType.OPTION, selected_option=DENY), "deny", False),
    (Origin.TOOL_APPROVAL, Response(ResponseType.TEXT, text_response="ok"), "text", False),  # fail closed
    (Origin.TOOL_APPROVAL, Response(ResponseType.AGENT_DECIDE), "agent_decide", False),
    (Origin.AGENT_TEXT, Response(ResponseType.OPTION, selected_option=DENY), "option", True),  # an agent's own "deny"
    (Origin.AGENT_TEXT, Response(ResponseType.SKIP), "skip", False),
    (Origin.AGENT_TEXT, Response(ResponseType.AGENT_DECIDE), "agent_decide", True),
])
def test_a_tool_approval_is_approved_by_approve_only(origin: Origin, response: Response, row: str, approved: bool) -> None:
    kind = kind_of(response, origin)
    assert kind.name == row and kind.approves(_esc(origin)) is approved


# -- a new kind: two source files ----------------------------------------------------------------

MEMBER = '    SKIP = "skip"\n    AGENT_DECIDE = "agent_decide"\n'
ROW = '''

KINDS = KINDS + (
    ResponseKind("defer", ResponseType.DEFER, "Ask me tomorrow", None, "--defer", "ask again tomorrow",
                 tell=lambda e, r: "Defer: ask again tomorrow.", value=lambda e, r: "defer",
                 said=lambda r: "deferred", logged="deferred until tomorrow", approved=False,
                 validate=lambda e, r: None if e.options else "defer needs options to come back to",
                 pane_key="defer", pane_rank=4, offered=lambda e: e.origin is not Origin.TOOL_APPROVAL),
)
'''

CHECKS = """
import json, sys
from engine.cli.answer_cmd import _response
from engine.cli.parser import build_parser
from engine.durable.database import Database
from engine.durable.decisions import decision_from_json
from engine.escalation import audit, protocol
from engine.escalation.answers import parse_answers
from engine.escalation.broker import InvalidResponse, validate_response
from engine.kernel.model import *
from rules.schema import json_schema
from tui.format import decision_words
from tui.widgets.decision_pane import choices_for

esc = Escalation("esc-1", "t", "run-1", "a", Reason.OTHER, "Ship?", options=(Option("y", "Yes"),))
pending = PendingEscalation(esc, TimeoutPolicy(None))
db = Database(sys.argv[1])
row = db.get_escalation("esc-1")
db.close()
decision = decision_from_json("esc-1", row["decision"])
[answer] = parse_answers("- responseType: defer\\n  additionalInstructions: soon\\n", "a.yaml")
args = build_parser().parse_args(["answer", "esc-1", "--defer"])
try:
    validate_response(PendingEscalation(esc.__class__(**{**esc.__dict__, "options": ()}), pending.policy), answer.response)
    refused = ""
except InvalidResponse as exc:
    refused = str(exc)
record = EscalationRecord(pending, decision)
print(json.dumps({
    "stored": [row["status"], row["decision"]["responseType"], row["decision"]["additionalInstructions"]],
    "answers": [answer.response.response_type.value, answer.response.additional_instructions],
    "cli": _response(args, Origin.AGENT_TEXT).response_type.value,
    "refused": refused,
    "told": protocol.decision_message(esc, decision).splitlines()[1],
    "value": protocol.decision_value(esc, decision),
    "approved": audit.approved(record),
    "pane": [[c.key, c.label] for c in choices_for(esc)],
    "log": decision_words(decision.to_event_fields(esc)),
    "schema": "defer" in json_schema("answers"),
}))
"""


def _patched_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "src"
    for top in ("engine", "rules", "tui"):
        shutil.copytree(ROOT / top, tree / top, ignore=shutil.ignore_patterns("__pycache__"))
    model = tree / "engine" / "kernel" / "model.py"
    text = model.read_text()
    assert text.count(MEMBER) == 1
    model.write_text(text.replace(MEMBER, MEMBER + '    DEFER = "defer"\n'))
    table = tree / "engine" / "kernel" / "responses.py"
    table.write_text(table.read_text() + ROW)
    return tree


def _changed(tree: Path) -> list[str]:
    changed = []
    for path in sorted(tree.rglob("*")):
        if path.is_file() and (ROOT / path.relative_to(tree)).read_bytes() != path.read_bytes():
            changed.append(str(path.relative_to(tree)))
    return changed


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_new_kind_is_one_row_and_its_response_type(tmp_path: Path) -> None:
    tree = _patched_tree(tmp_path)
    assert _changed(tree) == ["engine/kernel/model.py", "engine/kernel/responses.py"]
    # The copy's bytecode is written once, by the first process, and read by the next.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    url = f"sqlite:///{tmp_path / 'e.db'}"
    (tmp_path / "checks.py").write_text(CHECKS)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *argv], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90)

    esc = Escalation("esc-1", "t", "run-1", "a", Reason.OTHER, "Ship?", options=(Option("y", "Yes"),))
    db = Database(url)  # the row does not depend on the new kind: today's code writes it
    DecisionStore(db).raise_once(PendingEscalation(esc, TimeoutPolicy(None)))
    db.close()
    assert "--defer           ask again tomorrow" in run("-m", "engine", "answer", "--help").stdout
    # The real `escalate answer`, in the new kind: validated, decided in the database.
    answered = run("-m", "engine", "answer", "esc-1", "--defer", "--instructions", "after lunch", "--db", url)
    assert answered.returncode == 0 and answered.stdout == "esc-1: decided (deferred)\n", answered.stderr
    checked = run("checks.py", url)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout) == {
        "stored": ["decided", "defer", "after lunch"],
        "answers": ["defer", "soon"],
        "cli": "defer",
        "refused": "escalation esc-1: defer needs options to come back to",
        "told": "Defer: ask again tomorrow.",
        "value": "defer",
        "approved": False,
        "pane": [["opt:y", "Yes"], ["skip", "Skip this task"], ["custom", "Custom response..."],
                 ["defer", "Ask me tomorrow"]],
        "log": "deferred until tomorrow",
        "schema": True,
    }
