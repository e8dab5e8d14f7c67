"""The agents whose hooks escalate answers, and where each keeps its hooks.

Claude Code: `.claude/settings.json` in the project (`--user`: `~/.claude/settings.json`), events
PreToolUse, PermissionRequest and Notification. Codex: `.codex/hooks.json` in the project
(`--user`: `$CODEX_HOME/hooks.json`, else `~/.codex/hooks.json`), events PreToolUse and
PermissionRequest; Codex refuses `updatedInput` (it fails closed), so an approval with edited
arguments is answered there as a refusal naming the edited call.
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

    def settings_file(self, project: Path | None) -> Path:
        """The file `hook install` changes: the project's (`project`), else the user's."""
        if project is not None:
            return project / self.project_file
        if self.kind == "codex" and os.environ.get("CODEX_HOME"):
            return Path(os.environ["CODEX_HOME"]) / "hooks.json"
        return Path.home() / self.project_file


AGENTS = {
    "claude": Agent("claude", "Claude Code", (PRE_TOOL_USE, PERMISSION_REQUEST, NOTIFICATION), ".claude/settings.json", True),
    "codex": Agent("codex", "Codex", (PRE_TOOL_USE, PERMISSION_REQUEST), ".codex/hooks.json", False),
}
