"""Shared helpers: compile snippets, and a minimal in-memory FlowContext to run flows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

from engine.lang.compiler import compile_source, workflow_class
from engine.flow.flow_api import CallResult, FlowError


def compile_text(text: str, name: str = "t.sr"):
    return compile_source(text, Path("/tmp/escalate-tests") / name)


def codes(text: str) -> list[str]:
    return [d.code for d in compile_text(text).diagnostics]


def load(text: str):
    r = compile_text(text)
    assert r.ok, r.diagnostics
    return workflow_class(r)


class FakeCtx:
    """Agents are Python functions: (args) -> (value, escalated)."""

    def __init__(self, agents: dict[str, Callable[[list[Any]], tuple[Any, bool]]] | None = None,
                 input: str = "in") -> None:
        self.vars: dict[str, Any] = {"input_prompt": input}
        self.agents = agents or {}
        self.calls: list[tuple[str, list[Any]]] = []
        self.logs: list[Any] = []
        self.functions: dict[str, Callable[..., Any]] = {}
        self.parallel_ran: list[int] = []

    def get(self, name: str, line: int) -> Any:
        if name not in self.vars:
            raise FlowError(f"variable ${name} is not set", line)
        return self.vars[name]

    async def run_agent(self, agent, args, *, history=None, line):
        self.calls.append((agent, list(args)))
        value, escalated = self.agents[agent](list(args))
        return CallResult(value, escalated)

    async def run_flow(self, flow, args, *, line):
        self.calls.append((flow, list(args)))
        value, escalated = self.agents[flow](list(args))
        return CallResult(value, escalated)

    async def call_llm(self, prompt, args, *, model, line):
        self.calls.append((prompt, list(args)))
        return CallResult(self.agents[prompt](list(args))[0], False)

    async def escalate_to_human(self, message, *, line):
        return f"human says ok to {message}"

    async def log(self, message, *, line):
        self.logs.append(message)

    async def notify(self, message, *, line):
        self.logs.append(("notify", message))

    async def call_function(self, name, args, *, line):
        fn = self.functions.get(name)
        if fn is None:
            raise FlowError(f"no function {name}", line)
        return fn(*args)

    async def parallel(self, branches, *, line):
        self.parallel_ran.append(len(branches))
        await asyncio.gather(*(b() for b in branches))

    async def tick(self, line):
        await asyncio.sleep(0)

    def guardrail(self, name, *, line):
        from engine.flow.guardrails import check

        return bool(check(name, str(self.vars.get("message") or "")))

    def mask(self, guardrail, *, line):
        self.logs.append(("mask", guardrail))

    def block(self, condition, *, line):
        self.logs.append(("block", condition))

    def warn(self, message_or_condition, *, line):
        self.logs.append(("warn", message_or_condition))

    def retry_with(self, value, condition, *, line):
        self.logs.append(("retry_with", value, condition))


async def run_flow(text: str, ctx: FakeCtx, flow: str | None = None) -> Any:
    cls = load(text)
    wf = cls()
    kind, name = wf.entry(flow)
    assert kind == "flow"
    return await getattr(wf, cls.FLOWS[name])(ctx)
