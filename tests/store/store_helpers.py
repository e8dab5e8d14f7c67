"""Builders for the --store tests: lines of the JSON-lines history format of earlier versions."""

from __future__ import annotations

import json

WALL = 1_763_784_000.0  # 2025-11-22T04:00:00Z


def line(kind: str, at: str = "2025-11-22T04:00:00.000Z", **fields: object) -> str:
    return json.dumps({"v": 1, "kind": kind, "at": at, **fields}) + "\n"


def agent_line(source: str, target: str, approved: bool = True, at: str = "2025-11-22T04:00:00.000Z",
               denial: str | None = None) -> str:
    return line("agent_escalation", at, source=source, target=target, approved=approved,
                reason="needs analysis", task="analyze the session store", denial=denial)


def raised_line(esc_id: str, question: str = "Use JWT?", run_id: str = "r1-aaaaaa", at: str = "2025-11-22T04:00:00.000Z") -> str:
    return line("raised", at, id=esc_id, taskId="auth-refactor", runId=run_id, agent="planner",
                reason="architecture_decision", question=question, context="",
                options=[{"id": "jwt", "label": "Use JWT", "description": "", "recommended": True}],
                allowAgentDecision=False, timeout=None, origin="agent_text",
                policy={"deadline": None, "onTimeout": "wait", "optionId": None, "timeoutSeconds": None}, extra={})


def resolved_line(esc_id: str, option: str = "jwt", at: str = "2025-11-22T04:00:01.000Z") -> str:
    return line("resolved", at, id=esc_id, responseType="option", selectedOption=option, textResponse=None,
                additionalInstructions=None, resolvedBy="human", note="", stopsTask=False)


def run_line(run_id: str = "r1-aaaaaa", at: str = "2025-11-22T04:00:02.000Z") -> str:
    return line("run", at, id=run_id, task="auth-refactor", workflow="auth-refactor", flow=None, input="go",
                status="done", result="Plan ready", error=None, startedAt="2025-11-22T03:59:59.000Z")
