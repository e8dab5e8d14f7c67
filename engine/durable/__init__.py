"""Durable state: one database for runs, escalations, decisions and events, and runs executed as
DBOS workflows whose model turns, tool calls and escalations are recorded steps (docs/durable.md)."""
