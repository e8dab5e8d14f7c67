"""The `--answers` file: a list of seed 004 responses for a headless run, in order.

The n-th human escalation of a run gets the n-th entry. Validated with positions so that a bad
file is rejected before the run starts, as `FILE:LINE:COL: message`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from yaml.nodes import Node

from engine.kernel.model import Response
from engine.kernel.responses import WIRE_FIELDS, wire_kinds
from rules.yamlnodes import Reader, YamlError, YamlUnreadable, did_you_mean, read_text

AnswersError = YamlError  # invalid file: `FILE:LINE:COL: message`
AnswersUnreadable = YamlUnreadable

# taskId is accepted because seed 004's EscalationResponse carries it; answers go by order.
# = rules/schema.py's AnswerEntry (a test keeps them equal).
_KEYS = ("responseType", "selectedOption", "textResponse", "additionalInstructions", "taskId")


@dataclass(frozen=True)
class Answer:
    response: Response
    file: str
    line: int
    column: int

    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def load_answers(path: Path | str) -> list[Answer]:
    return parse_answers(read_text(str(path)), str(path))


def parse_answers(text: str, file: str) -> list[Answer]:
    from rules.schema import AnswersFile, validate_document

    r = Reader(text, file)
    if r.root is None or r.is_null(r.root):
        return []
    answers = [_answer(r, node, n) for n, node in enumerate(r.sequence(r.root, "the answers file"), 1)]
    validate_document(AnswersFile, r, what="the answers file")
    return answers


def _answer(r: Reader, node: Node, n: int) -> Answer:
    what = f"answer {n}"
    entries = r.mapping(node, what, _KEYS)
    type_node = r.require(entries, "responseType", node, what)
    type_text = r.string(type_node, f"{what}: responseType")
    rows = {k.response_type.value: k for k in wire_kinds()}
    if type_text not in rows:
        raise r.error(type_node, f"{what}: unknown responseType {type_text!r}{did_you_mean(type_text, list(rows))}")
    kind = rows[type_text]
    needed = kind.wire_field
    for key in WIRE_FIELDS.values():
        if key in entries and key != needed:
            raise r.error(entries[key][0], f"{what}: {key} does not go with responseType {type_text}")
    if needed is not None:
        r.require(entries, needed, node, f"{what} (responseType {type_text})")

    def text(key: str, allow_empty: bool) -> str | None:
        return r.string(entries[key][1], f"{what}: {key}", allow_empty=allow_empty) if key in entries else None

    if "taskId" in entries:
        text("taskId", False)
    response = Response(
        kind.response_type,
        selected_option=text("selectedOption", False),
        text_response=text("textResponse", True),
        additional_instructions=text("additionalInstructions", True) or None,
    )
    return Answer(response, r.file, node.start_mark.line + 1, node.start_mark.column + 1)
