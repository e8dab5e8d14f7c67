"""A scripted ACP agent, written with the SDK's agent side: `python scripted_agent.py SCRIPT.json`.

The script is a JSON object: `turns`, a list (one per prompt, in order) of lists of steps;
`protocol_version` (default 1), `load_session` (the capability, default false), `state` (a file
holding the next turn's index, so that an agent started again goes on where the last one
stopped), `trace` (a file
where the agent appends one JSON line per thing it saw: prompts, permission outcomes, file and
terminal results, cancels, session loads; at `initialize`, its nice value and its autogroup's). Steps:

  {"say": "text"}                 agent_message_chunk (split in `chunks` pieces when given)
  {"think": "text"}               agent_thought_chunk
  {"tool": {"id", "title", "kind", "status"}}       tool_call;  {"tool_update": {"id", "status"}}
  {"plan": ["step one", ...]}     a plan
  {"permission": {"title", "kind", "raw_input", "options": [[id, name, kind], ...]}}
                                  asks; says "outcome: <option id | cancelled>"
  {"write": [path, content]}, {"read": path}, {"run": [command, [args...]]}   client methods;
                                  each says its result or "error: <message>"
  {"spawn": [command, [args...]]} a terminal left running (traced: its id)
  {"wait": seconds}               sleeps (a cancel ends it: stop reason cancelled)
  {"echo": true}                  says "echo: <the prompt's last line>"
  {"usage": [used, size, cost]}   a usage_update (cost in USD, or null)
  {"turn_usage": tokens}          the turn's reply carries `usage` with these total tokens
  {"crash": code}                 exits at once with that code (after "stderr" text, if given)
  {"raw": "line"}                 writes this line to stdout as it is
  {"flood": bytes}                writes one line of that many bytes, no newline for a while

No turn left: it replies "(no more turns)".
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    plan_entry,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import AgentCapabilities, Cost, PermissionOption, ToolCallUpdate, Usage, UsageUpdate


def autogroup_nice() -> int | None:
    """This process's autogroup's nice value (Linux; None without autogroups, or in a task group
    that is not one: a container's cgroup makes the file empty)."""
    try:
        words = open("/proc/self/autogroup").read().split()
    except OSError:
        return None
    return int(words[words.index("nice") + 1]) if "nice" in words else None


class Scripted(Agent):
    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script
        self.turns = list(script.get("turns", []))
        self.conn: Any = None
        self.cancelled: asyncio.Event = asyncio.Event()
        self.prompt_text = ""

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def trace(self, **fields: Any) -> None:
        path = self.script.get("trace")
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(fields) + "\n")

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        self.trace(event="initialize", fs=client_capabilities.fs.write_text_file if client_capabilities else None,
                   terminal=client_capabilities.terminal if client_capabilities else None,
                   nice=os.getpriority(os.PRIO_PROCESS, 0), autogroup=autogroup_nice(), pid=os.getpid())
        return InitializeResponse(protocol_version=self.script.get("protocol_version", PROTOCOL_VERSION),
                                  agent_capabilities=AgentCapabilities(load_session=bool(self.script.get("load_session"))))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        self.trace(event="new_session", cwd=cwd, pid=os.getpid())
        return NewSessionResponse(session_id=f"s-{os.getpid()}")

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any) -> LoadSessionResponse:
        self.trace(event="load_session", session=session_id)
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.trace(event="cancel")
        self.cancelled.set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        self.trace(event="prompt", text=text)
        turn = self.next_turn()
        if turn is None:
            await self.say(session_id, "(no more turns)")
            return PromptResponse(stop_reason="end_turn")
        self.prompt_text = text
        for step in turn:
            if await self.step(session_id, step):
                return PromptResponse(stop_reason="cancelled")
        told = next((s["turn_usage"] for s in turn if "turn_usage" in s), None)
        usage = None if told is None else Usage(total_tokens=told, input_tokens=told, output_tokens=0)
        return PromptResponse(stop_reason="end_turn", usage=usage)

    def next_turn(self) -> list[dict[str, Any]] | None:
        state = self.script.get("state")
        if state is None:
            return self.turns.pop(0) if self.turns else None
        index = int(open(state).read()) if os.path.exists(state) else 0
        with open(state, "w") as f:
            f.write(str(index + 1))
        return self.turns[index] if index < len(self.turns) else None

    async def say(self, session_id: str, text: str, chunks: int = 1) -> None:
        size = max(1, -(-len(text) // chunks))
        for i in range(0, max(1, len(text)), size):
            await self.conn.session_update(session_id=session_id, update=update_agent_message_text(text[i:i + size]))

    async def step(self, sid: str, step: dict[str, Any]) -> bool:
        """One step; True when a cancel ended the turn."""
        if "say" in step:
            await self.say(sid, step["say"], step.get("chunks", 1))
        elif "think" in step:
            await self.conn.session_update(session_id=sid, update=update_agent_thought_text(step["think"]))
        elif "tool" in step:
            t = step["tool"]
            await self.conn.session_update(session_id=sid, update=start_tool_call(
                t["id"], t["title"], kind=t.get("kind"), status=t.get("status", "pending")))
        elif "tool_update" in step:
            t = step["tool_update"]
            await self.conn.session_update(session_id=sid, update=update_tool_call(t["id"], status=t["status"]))
        elif "plan" in step:
            await self.conn.session_update(session_id=sid, update=update_plan([plan_entry(e) for e in step["plan"]]))
        elif "permission" in step:
            p = step["permission"]
            options = [PermissionOption(option_id=o[0], name=o[1], kind=o[2]) for o in p["options"]]
            raw = p.get("raw_input")
            if p.get("stamp"):  # the benchmark's clock (CLOCK_MONOTONIC: one for every process)
                raw = {**(raw or {}), "sent_ns": time.monotonic_ns()}
            call = ToolCallUpdate(tool_call_id=p.get("id", "call-1"), title=p["title"], kind=p.get("kind", "execute"),
                                  raw_input=raw)
            reply = await self.conn.request_permission(session_id=sid, tool_call=call, options=options)
            told = time.monotonic_ns()
            outcome = reply.outcome
            chosen = getattr(outcome, "option_id", None) or outcome.outcome
            self.trace(event="permission", outcome=chosen, told_ns=told)
            await self.say(sid, f"outcome: {chosen}\n")
        elif "write" in step:
            await self.client_call(sid, "write", lambda: self.conn.write_text_file(
                session_id=sid, path=step["write"][0], content=step["write"][1]), lambda r: "written")
        elif "read" in step:
            await self.client_call(sid, "read", lambda: self.conn.read_text_file(session_id=sid, path=step["read"]),
                                   lambda r: r.content)
        elif "run" in step:
            async def run() -> Any:
                made = await self.conn.create_terminal(session_id=sid, command=step["run"][0], args=step["run"][1])
                exit_status = await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=made.terminal_id)
                out = await self.conn.terminal_output(session_id=sid, terminal_id=made.terminal_id)
                await self.conn.release_terminal(session_id=sid, terminal_id=made.terminal_id)
                return f"exit {exit_status.exit_code}: {out.output.strip()}"
            await self.client_call(sid, "run", run, str)
        elif "spawn" in step:  # a command left running: its terminal's id traced, nothing awaited
            made = await self.conn.create_terminal(session_id=sid, command=step["spawn"][0], args=step["spawn"][1])
            self.trace(event="spawn", terminal=made.terminal_id)
        elif "echo" in step:
            await self.say(sid, "echo: " + self.prompt_text.rsplit("\n", 1)[-1])
        elif "usage" in step:
            used, size, cost = step["usage"]
            await self.conn.session_update(session_id=sid, update=UsageUpdate(
                session_update="usage_update", used=used, size=size,
                cost=None if cost is None else Cost(amount=cost, currency="USD")))
        elif "wait" in step:
            try:
                await asyncio.wait_for(self.cancelled.wait(), step["wait"])
                return True
            except asyncio.TimeoutError:
                pass
        elif "crash" in step:
            if step.get("stderr"):
                sys.stderr.write(step["stderr"] + "\n")
                sys.stderr.flush()
            os._exit(step["crash"])
        elif "raw" in step:
            sys.stdout.buffer.write(step["raw"].encode() + b"\n")
            sys.stdout.buffer.flush()
        elif "flood" in step:
            # The SDK made stdout non-blocking: write as the pipe takes it, never a newline.
            data = memoryview(b"x" * step["flood"])
            while data:
                try:
                    data = data[os.write(sys.stdout.fileno(), data[:65536]):]
                except BlockingIOError:
                    await asyncio.sleep(0.001)
            await asyncio.sleep(30)
        return False

    async def client_call(self, sid: str, what: str, call: Any, shown: Any) -> None:
        try:
            result = shown(await call())
        except Exception as exc:  # the client's error reply
            result = f"error: {exc}"
        self.trace(event=what, result=result)
        await self.say(sid, f"{what}: {result}\n")


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        script = json.load(f)
    asyncio.run(run_agent(Scripted(script)))


if __name__ == "__main__":
    main()
