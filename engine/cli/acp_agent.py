"""`escalate run --agent "CMD ARGS"` (and `console --agent`): an ACP agent without a `.sr` file of
the user's. The workflow it runs: engine/runtime/acp/workflow.py (the console's start-run screen
uses it too)."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.runtime.acp import workflow
from engine.runtime.acp.workflow import BadAgentCommand
from engine.text_safety import utf8_text


class AgentUsage(Exception):
    """A bad --agent (or an option that goes with a workflow only): one line, exit 2."""


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
    """workflow.write_agent_workflow, its failure as a usage error of --agent."""
    try:
        return workflow.write_agent_workflow(command, workspace)
    except BadAgentCommand as exc:
        raise AgentUsage(f"--agent: {exc}") from None
