"""The kernel: what every layer above speaks (escalations, decisions, time). Imports nothing of
escalate's but the leaves; never Textual, ADK or a database."""
