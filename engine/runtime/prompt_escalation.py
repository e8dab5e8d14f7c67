"""Seeds 000/001: a prompt's `escalate if` condition checked on an agent's output.

An error while evaluating means "no escalation" (fail-safe, language.md meaning 5).
"""

from __future__ import annotations

import logging
from typing import Any

from engine.flow.spec import AgentSpec, EscalationSpec, WorkflowBase

log = logging.getLogger("escalate.runtime")


def escalation_spec(workflow: WorkflowBase, agent: AgentSpec) -> EscalationSpec | None:
    """The condition of the agent's instruction prompt (else of its `prompt`)."""
    for name in (agent.instruction, agent.prompt):
        prompt = workflow.PROMPTS.get(name or "")
        if prompt is not None and prompt.escalation is not None:
            return prompt.escalation
    return None


def matches(spec: EscalationSpec, output: Any, ctx: Any) -> bool:
    try:
        if spec.op == "expr":
            return bool(spec.check(ctx, output)) if spec.check is not None else False
        from engine.flow.flowlib import normalized_equals

        text = output if isinstance(output, str) else str(output)
        value = spec.value if spec.value is not None else ""
        if spec.op == "~":
            return bool(normalized_equals(text, value))
        if spec.op == "==":
            return text == value
        if spec.op == "!=":
            return text != value
        if spec.op == "contains":
            return value in text
    except Exception:  # fail-safe: a condition that cannot be evaluated does not escalate
        log.debug("escalation condition failed to evaluate", exc_info=True)
    return False
