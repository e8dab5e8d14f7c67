"""Agents escalate did not write (Claude Code, Codex, any MCP client) asking their person here.

- core.py: the one desk they share. A session is a run in the database; the rules decide first
  (the desk's tool verdict, as for `.sr` tool calls); what must wait for a person is a durable
  escalation raised under an idempotency key (asked again, it is continued, never raised twice),
  withdrawn when its asker is gone, decided by any console, `serve` page, `escalate answer` or a
  taught rule, or by the rules' default at its deadline (`timeout_default`).
- claude.py, codex.py: each agent's hook input and decision JSON, and installing the hooks in
  its settings file.

This package sits at the entry points' level (it opens services): nothing below imports it.
Heavy libraries (ADK, google.genai, LiteLLM, Textual, aiohttp, DBOS) are never imported here:
a hook runs for every tool call (tests/outside/test_imports.py).
"""
