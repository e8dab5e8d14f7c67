"""The one-agent workflow of an ACP command: what `escalate run --agent`, `console --agent` and the
console's start-run screen run, so that no `.sr` file of the user's is needed.

It is written under the workspace's `.escalate/acp/` (named after the command's program and a
hash of the command), so that a durable run of it can be continued like any other (`resume` and
the workers compile the workflow again from that file).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from engine.flow.spec import acp_argv


class BadAgentCommand(ValueError):
    """An ACP command that cannot be run, or a workflow that cannot be written: one line."""


def agent_source(command: str) -> str:
    """The workflow: agent `main` on the model `main`, which is the ACP command."""
    quoted = "'" + command.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return (f"model main = acp {quoted}\n"
            'prompt acp_instruction: """Work in the current folder on the task you are given."""\n'
            "agent main:\n"
            "    instruction acp_instruction\n")


def command_argv(command: str) -> list[str]:
    """The command's words (BadAgentCommand: several lines, empty, or unsplittable)."""
    if "\n" in command or "\r" in command or "\x00" in command:
        raise BadAgentCommand("the command must be one line")
    try:
        return acp_argv(command)
    except ValueError as exc:
        raise BadAgentCommand(str(exc)) from None


def write_agent_workflow(command: str, workspace: Path) -> tuple[Path, str]:
    """The one-agent workflow of an ACP command, written under the workspace; with the command's
    program name (the run's task). BadAgentCommand: a bad command or a folder that cannot be
    written."""
    argv = command_argv(command)
    program = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(argv[0]).name)[:40] or "agent"
    digest = hashlib.sha256(command.encode("utf-8")).hexdigest()[:10]
    folder = workspace / ".escalate" / "acp"
    path = folder / f"{program}-{digest}.sr"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(agent_source(command), encoding="utf-8")
    except OSError as exc:
        raise BadAgentCommand(f"cannot write {path}: {exc.strerror or exc}") from None
    return path, program


def check_installed(command: str, workspace: Path) -> None:
    """BadAgentCommand when the command's program cannot be found: a bare name not on PATH, or a
    path (relative to the workspace, where the agent starts) that is not an executable file."""
    program = command_argv(command)[0]
    if "/" not in program:
        if shutil.which(program) is None:
            raise BadAgentCommand(f"not installed ({program!r} is not on PATH)")
        return
    path = workspace / Path(program).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BadAgentCommand(f"not installed ({program!r} is not an executable file in {workspace})")


@dataclass(frozen=True)
class AgentWorkflow:
    """An ACP command made ready to run: its workflow file, the run's task, its workspace."""

    path: Path
    task: str
    workspace: Path


def prepare_agent(command: str, workspace: Path) -> AgentWorkflow:
    """The console's start-run screen: the workspace and the command checked (the program found,
    so that a typo is told at once, not as a failed run), then the workflow written."""
    if not workspace.is_dir():
        raise BadAgentCommand(f"workspace {workspace}: not a directory")
    check_installed(command, workspace)
    path, task = write_agent_workflow(command, workspace)
    return AgentWorkflow(path, task, workspace.resolve())
