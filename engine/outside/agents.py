"""The agents whose hooks escalate answers, and where each keeps its hooks.

Claude Code: `.claude/settings.json` in the project (`--user`: `~/.claude/settings.json`), events
PreToolUse, PermissionRequest and Notification. Codex: `.codex/hooks.json` in the project
(`--user`: `$CODEX_HOME/hooks.json`, else `~/.codex/hooks.json`), events PreToolUse and
PermissionRequest. Codex refuses `updatedInput` (it fails closed), so an approval with edited
arguments is answered there as a refusal naming the edited call; and its PreToolUse is answered
with a denial or nothing (allow is not taken there by every Codex version): an approved call goes
on to Codex's own approval, whose PermissionRequest is answered from the same decision (both are
keyed by the call, decided within the last two minutes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engine.outside.hooks import NOTIFICATION, PERMISSION_REQUEST, PRE_TOOL_USE


@dataclass(frozen=True)
class Agent:
    kind: str
    title: str
    events: tuple[str, ...]
    project_file: str  # relative to the project folder
    edits: bool  # it takes `updatedInput`
    pre_tool_allow: bool  # its PreToolUse takes permissionDecision "allow" (else: deny, or nothing)
    asks_twice: bool  # a call it lets through at PreToolUse may come back as a PermissionRequest

    def settings_file(self, project: Path | None) -> Path:
        """The file `hook install` changes: the project's (`project`), else the user's."""
        if project is not None:
            return project / self.project_file
        if self.kind == "codex" and os.environ.get("CODEX_HOME"):
            return Path(os.environ["CODEX_HOME"]) / "hooks.json"
        return Path.home() / self.project_file


AGENTS = {
    "claude": Agent("claude", "Claude Code", (PRE_TOOL_USE, PERMISSION_REQUEST, NOTIFICATION), ".claude/settings.json",
                    edits=True, pre_tool_allow=True, asks_twice=False),
    "codex": Agent("codex", "Codex", (PRE_TOOL_USE, PERMISSION_REQUEST), ".codex/hooks.json",
                   edits=False, pre_tool_allow=False, asks_twice=True),
}
