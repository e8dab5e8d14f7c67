"""The agents whose hooks escalate answers, and where each keeps its hooks.

Claude Code: `.claude/settings.json` in the project (`--user`: `~/.claude/settings.json`), events
PreToolUse, PermissionRequest and Notification. Codex: `.codex/hooks.json` in the project
(`--user`: `$CODEX_HOME/hooks.json`, else `~/.codex/hooks.json`), events PreToolUse and
PermissionRequest. Codex (0.171.0, checked with the real CLI: tests/outside/test_codex_cli.py)
refuses in a hook's answer, as invalid, `updatedInput` and PreToolUse's `permissionDecision:
"allow"`, `continue: false` and `stopReason`, and PermissionRequest's `interrupt: true`; an invalid
answer, like a hook that fails, lets the call go on to Codex's own approval policy, which `codex
exec` sets to `never`: the call runs. So: an approval with edited arguments is answered there as a
refusal naming the edited call; a `stop` rule as a plain denial; a request withdrawn while Codex may
still be alive as a denial; and PreToolUse with a denial or nothing: an approved call goes on to
Codex's own approval, whose PermissionRequest (where Codex asks: not in `codex exec`) is answered
from the same decision (both are keyed by the call without the `description` Codex adds to the
second, decided within the last two minutes).
"""

from __future__ import annotations

from pathlib import Path

from engine.kernel.frozen import Frozen
from engine.outside.hooks import NOTIFICATION, PERMISSION_REQUEST, PRE_TOOL_USE


class Agent(Frozen):
    kind: str
    title: str
    events: tuple[str, ...]
    project_file: str  # relative to the project folder
    edits: bool  # it takes `updatedInput`
    pre_tool_allow: bool  # its PreToolUse takes permissionDecision "allow" (else: deny, or nothing)
    asks_twice: bool  # a call it lets through at PreToolUse may come back as a PermissionRequest
    stops: bool  # it takes a denial that stops the task ("continue": false, "interrupt": true)
    fails_open: bool  # it runs a call whose hook failed (Codex's approval policy decides; `codex exec` never asks)

    def settings_file(self, project: Path | None) -> Path:
        """The file `hook install` changes: the project's (`project`), else the user's."""
        if project is not None:
            return project / self.project_file
        if self.kind == "codex":
            from engine.outside.codex_setup import codex_home

            return codex_home() / "hooks.json"
        return Path.home() / self.project_file


AGENTS = {
    "claude": Agent("claude", "Claude Code", (PRE_TOOL_USE, PERMISSION_REQUEST, NOTIFICATION), ".claude/settings.json",
                    edits=True, pre_tool_allow=True, asks_twice=False, stops=True,
                    fails_open=False),
    "codex": Agent("codex", "Codex", (PRE_TOOL_USE, PERMISSION_REQUEST), ".codex/hooks.json",
                   edits=False, pre_tool_allow=False, asks_twice=True, stops=False,
                   fails_open=True),
}
