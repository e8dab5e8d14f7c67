"""A run's position in its `--script` file: which replies each agent has used. Plain Python, no
ADK: a run holds its cursor from its start, and a run that never reaches a model turn must not
import ADK for it (docs/startup.md)."""

from __future__ import annotations

import os

from engine.runtime.models import OFFLINE_HINT
from engine.runtime.script import Reply, Script


class ScriptExhausted(Exception):
    """An agent asked the script for a reply and none was left: the run fails (exit 1)."""

    def __init__(self, agent: str, script: Script) -> None:
        if script.agents or script.path != Script.empty().path:
            message = f"agent {agent!r} has no scripted reply left in {script.path}"
        else:
            message = f"agent {agent!r} has no real model and no --script was given; {OFFLINE_HINT}"
        super().__init__(message)
        self.agent = agent


class ScriptCursor:
    """One run's position in the script: which replies each agent has used."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._used: dict[str, set[int]] = {}
        # Per agent, the first reply not used yet: every reply before it is used, so a turn looks
        # from there, not from the top (a run of N turns read N²/2 used replies, ~0.02 ms a turn
        # at 200: docs/durable.md "What a turn costs", the sixth pass).
        self._first: dict[str, int] = {}

    def next_reply(self, agent: str, latest_input: str) -> tuple[int, Reply]:
        used = self._used.setdefault(agent, set())
        # The unnamed `agent:` is scripted under "" or, as the origin project names it, "default".
        replies = self.script.agents.get(agent) or (self.script.agents.get("default", ()) if agent == "" else ())
        first = self._first.get(agent, 0)
        for index in range(first, len(replies)):
            reply = replies[index]
            if index not in used and reply.matches(latest_input):
                self._use(agent, used, index)
                return index, reply
        raise ScriptExhausted(agent, self.script)

    def mark_used(self, agent: str, index: int) -> None:
        """A replayed turn used this reply (durable runs: the turn was not asked again)."""
        self._use(agent, self._used.setdefault(agent, set()), index)

    def _use(self, agent: str, used: set[int], index: int) -> None:
        used.add(index)
        first = self._first.get(agent, 0)
        while first in used:
            first += 1
        self._first[agent] = first

    @staticmethod
    def call_id(agent: str) -> str:
        # Random, not counted: a replayed turn keeps its recorded id and a live one never reuses it.
        # 40 random bits, as the first ten hex digits of a uuid4 were (os.urandom: no UUID object).
        return f"sr-{agent}-{os.urandom(5).hex()}"
