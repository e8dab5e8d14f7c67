"""`escalate run --agent "CMD ARGS"` (and `console --agent`): an ACP agent without a `.sr` file of
the user's.

The agent becomes a one-agent workflow written under the workspace's `.escalate/acp/` (named
after the command and a hash of it), so that a durable run of it can be resumed like any other
(`escalate resume` compiles the workflow again from that file).
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from engine.flow.spec import acp_argv
from engine.text_safety import utf8_text


class AgentUsage(Exception):
    """A bad --agent (or an option that goes with a workflow only): one line, exit 2."""


def agent_source(command: str) -> str:
    """The workflow: agent `main` on the model `main`, which is the ACP command."""
    quoted = "'" + command.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return (f"model main = acp {quoted}\n"
            'prompt acp_instruction: """Work in the current folder on the task you are given."""\n'
            "agent main:\n"
            "    instruction acp_instruction\n")


def agent_workflow(args: argparse.Namespace) -> tuple[str, str]:
    """`run --agent`: (the workflow file written, the task name: the command's program name)."""
    for option, given in (("--flow", args.flow), ("--script", args.script)):
        if given:
            raise AgentUsage(f"--agent: {option} applies to a workflow; an ACP agent has no flows and answers itself")
    workspace = Path(args.workspace) if args.workspace else Path.cwd()
    if not workspace.is_dir():
        raise AgentUsage(f"--workspace {args.workspace}: not a directory")
    path, program = write_agent_workflow(utf8_text(args.agent), workspace)
    return str(path), program


def write_agent_workflow(command: str, workspace: Path) -> tuple[Path, str]:
    """The one-agent workflow of an ACP command, written under the workspace (AgentUsage: a bad
    command or a folder that cannot be written); with the command's program name."""
    if "\n" in command or "\r" in command or "\x00" in command:
        raise AgentUsage("--agent: the command must be one line")
    try:
        argv = acp_argv(command)
    except ValueError as exc:
        raise AgentUsage(f"--agent: {exc}") from None
    program = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(argv[0]).name)[:40] or "agent"
    digest = hashlib.sha256(command.encode("utf-8")).hexdigest()[:10]
    folder = workspace / ".escalate" / "acp"
    path = folder / f"{program}-{digest}.sr"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(agent_source(command), encoding="utf-8")
    except OSError as exc:
        raise AgentUsage(f"--agent: cannot write {path}: {exc.strerror or exc}") from None
    return path, program
