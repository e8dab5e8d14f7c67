"""The files people edit, defined once: the rules, script and answers formats as pydantic models.

These models are the formats' definition: `escalate rules schema` publishes them as JSON Schema
(for editors' completion), and every loader validates the whole document against them
(`validate_document`) after its own position-exact checks, so a value the hand-written checks do
not look at (budgets, usage, notify) is still refused with FILE:LINE:COL. The loaders' key lists
are kept equal to these models by tests/rules/test_schema.py.

pydantic (shipped with ADK) costs ~100 ms to import: this module is imported only when a user's
file is read, never before the console's first frame on the bundled demo.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, RootModel, Tag, ValidationError, model_validator
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.kernel.model import Reason, ResponseType
from rules.model import MAX_AGENT_DEPTH, MAX_NOTIFY_SECONDS, MAX_SECONDS
from rules.yamlnodes import Reader, YamlError

Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
ReasonName = Literal[tuple(r.value for r in Reason)]  # type: ignore[valid-type]
ON_TIMEOUT_PATTERN = r"^(continue|stop|wait|agent_decide|recommended|option:\S.*)$"


class _Strict(BaseModel):
    """Unknown keys are errors; YAML's types are taken as written (no "10" for 10)."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False)


# ---- rules file ----------------------------------------------------------------------------


class RuleEntry(_Strict):
    """One rule: the first whose pattern matches decides."""

    pattern: str = Field(min_length=1, description="case-insensitive text ('_' and '-' count as spaces); 're:' prefix: an RE2 regex")
    action: Literal["ask_user", "allow", "deny", "stop"]
    timeout: Seconds | None = Field(None, description="deadline in seconds for what this rule sends to a human")
    taught: str | None = Field(None, description="set when the console saved this rule from a decision: when and from what")


class TaskOverrideEntry(_Strict):
    alwaysAsk: bool = Field(False, description="every escalation of this task waits for a human: no timeout default")
    requireConfirmation: bool = Field(False, description="every tool call of this task needs a human's confirmation")
    rules: list[RuleEntry] | None = Field(None, description="checked before the global rules")


class ReasonDefaultEntry(_Strict):
    timeout: Seconds = Field(300.0, description="seconds before the default applies")
    onTimeout: str = Field(pattern=ON_TIMEOUT_PATTERN, description="continue | stop | wait | agent_decide | recommended | option:ID")


class BudgetEntry(_Strict):
    """seed 004's cost_warning, raised by the runtime itself."""

    tokens: int = Field(ge=1, description="tokens per run")
    warnAt: float = Field(0.8, gt=0, le=1, description="fraction of the budget at which a cost_warning is raised")


class EscalationRulesSection(_Strict):
    global_: list[RuleEntry] | None = Field(None, alias="global", description="checked in order; the first match wins")
    taskOverrides: dict[str, TaskOverrideEntry | None] | None = Field(None, description="by a run's task name")
    defaults: dict[ReasonName, ReasonDefaultEntry] | None = Field(None, description="when nobody answers in time, by reason")  # type: ignore[valid-type]
    budgets: dict[str, BudgetEntry] | None = Field(None, description="'default' (per run) or a task name")


class PolicySection(_Strict):
    """Agent-to-agent escalation (seed 002)."""

    paths: dict[str, list[str]] | None = None
    fallbacks: dict[str, list[str]] | None = None
    maxDepth: int = Field(3, ge=1, le=MAX_AGENT_DEPTH)
    loopWindow: Seconds = 300.0
    targetHints: dict[str, str] | None = None


class NotifyEntry(_Strict):
    """A command run for each escalation that waits for a human (never through a shell)."""

    command: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="program and arguments; the escalation arrives as JSON on stdin")
    timeout: float = Field(10.0, gt=0, le=MAX_NOTIFY_SECONDS, description="seconds before the command is killed")


class RulesFile(_Strict):
    """The rules file (`--rules`): sections it omits keep the shipped ones."""

    escalationRules: EscalationRulesSection | None = None
    policy: PolicySection | None = None
    notify: NotifyEntry | None = Field(None, description="tell a chat or phone relay when a decision waits")


# ---- script file -----------------------------------------------------------------------------


class OptionEntry(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    id: str = Field(min_length=1)
    label: str = Field(min_length=1)
    description: str = ""
    recommended: bool = False


class EscalateEntry(BaseModel):
    """seed 004's escalation fields, as the model would send them."""

    model_config = ConfigDict(extra="allow", strict=True)

    question: str = Field(min_length=1)
    reason: str = ""
    context: str = ""
    options: list[OptionEntry] = []
    allowAgentDecision: bool = False
    timeout: Seconds | None = None


class UsageEntry(_Strict):
    """Tokens this reply counts as, so budgets can be tested offline."""

    input: int = Field(0, ge=0)
    output: int = Field(0, ge=0)


class ReplyEntry(_Strict):
    """One model turn: exactly one of text, tool (+ args), escalate."""

    text: str | None = None
    tool: str | None = Field(None, min_length=1)
    args: dict[str, Any] | None = None
    escalate: EscalateEntry | None = None
    when: str | None = Field(None, min_length=1, description="case-insensitive substring of the agent's latest input")
    usage: UsageEntry | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "ReplyEntry":
        kinds = [k for k in ("text", "tool", "escalate") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("needs exactly one of text, tool, escalate")
        if self.args is not None and self.tool is None:
            raise ValueError("'args' only goes with 'tool'")
        return self


# A plain string is a text reply; only a mapping is checked as a ReplyEntry (an error then
# speaks of the mapping's keys, not of "not a string").
Reply = Annotated[
    Annotated[str, Tag("text")] | Annotated[ReplyEntry, Tag("reply")],
    Discriminator(lambda value: "text" if isinstance(value, str) else "reply"),
]


class ScriptFile(_Strict):
    """The scripted model (`--script`): each agent's replies, in order."""

    agents: dict[str, list[Reply]] | None


# ---- answers file ----------------------------------------------------------------------------


class AnswerEntry(_Strict):
    responseType: Literal[tuple(t.value for t in ResponseType)]  # type: ignore[valid-type]
    selectedOption: str | None = Field(None, min_length=1)
    textResponse: str | None = None
    additionalInstructions: str | None = None
    taskId: str | None = Field(None, min_length=1)


class AnswersFile(RootModel[list[AnswerEntry] | None]):
    """The answers file (`--answers`): the n-th human escalation of a run gets the n-th entry."""


SCHEMAS: dict[str, type[BaseModel]] = {"rules": RulesFile, "script": ScriptFile, "answers": AnswersFile}


def json_schema(kind: str) -> str:
    """The JSON Schema of one file kind ('rules', 'script', 'answers'), as editors read it."""
    schema = SCHEMAS[kind].model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2)


def validate_document(model: type[BaseModel], reader: Reader, *, what: str) -> None:
    """Validate `reader`'s document against `model`; the first problem is a YamlError at the
    position of the value (or key) it is about."""
    if reader.root is None or reader.is_null(reader.root):
        return  # an empty document: each loader says what that means (the shipped rules, no answers)
    data = reader.plain(reader.root)
    try:
        model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # An unknown key first: it usually explains the rest (a misspelt required key).
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        raise _positioned(reader, first, what) from None


def _positioned(reader: Reader, error: Any, what: str) -> YamlError:
    node, key_node, path = _locate(reader.root, error["loc"])
    where = _dotted(path) or what
    kind = error["type"]
    if kind == "extra_forbidden" and key_node is not None:
        parent = _dotted(path[:-1]) or what
        return reader.error(key_node, f"{parent}: unknown key {path[-1]!r}")
    if kind == "missing":
        return reader.error(node, f"{where}: missing required key {str(error['loc'][-1])!r}")
    message = error["msg"][0].lower() + error["msg"][1:]
    return reader.error(node, f"{where}: {message.removeprefix('value error, ')}")


def _locate(root: Node | None, loc: tuple[Any, ...]) -> tuple[Node | None, Node | None, list[str]]:
    """The deepest node `loc` reaches (pydantic's union member names are skipped)."""
    node, key_node, path = root, None, []
    for part in loc:
        if isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node, key_node = node.value[part], None
            path.append(f"[{part + 1}]")
        elif isinstance(node, MappingNode) and not isinstance(part, int):
            found = next(((k, v) for k, v in node.value if isinstance(k, ScalarNode) and str(k.value) == str(part)), None)
            if found is None:
                continue  # a union member's name, or a missing key: stay on the parent
            key_node, node = found
            path.append(str(part))
    return node, key_node, path



def _dotted(path: list[str]) -> str:
    return "".join(p if p.startswith("[") or not i else f".{p}" for i, p in enumerate(path))
