"""ACP agents (Agent Client Protocol): a workflow agent backed by a command that speaks ACP on
its stdin/stdout (Gemini CLI, Claude Code through its adapter, Codex, goose, ...). escalate is
the client: it starts the agent in the run's workspace, sends prompts, streams the agent's
updates into the run's log, turns `session/request_permission` into tool approvals on the desk,
and serves the `fs` and `terminal` client methods confined to the workspace (docs/acp.md).

The SDK (`agent-client-protocol`) is imported only here and only when an ACP agent runs.
"""
