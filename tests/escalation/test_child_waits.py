"""A `use` child or a hand-off target that needs a person does not wait inside its tool: its
caller pauses on the tool call, and the wait happens at the flow level (child_calls.py); then
the child goes on and its result answers the paused call."""

from __future__ import annotations

import asyncio

from engine.kernel.model import ResolvedBy, Response, ResponseType
from engine.runtime.frames import current
from tests.escalation.e2e_support import Harness

USE_CHILD = """\
streetrace v1

prompt lead_p: \"\"\"You lead.\"\"\"
prompt helper_p: \"\"\"You help.\"\"\"

agent helper:
    instruction helper_p
    description "Answers questions"

agent lead:
    instruction lead_p
    use helper

flow main:
    $out = run agent lead $input
    return $out
"""

SCRIPT = """\
agents:
  lead:
    - tool: helper
      args: {request: "pick a database"}
    - text: "lead done: helper said postgres"
      when: "postgres"
  helper:
    - escalate:
        reason: architecture_decision
        question: "Which database?"
        options:
          - {id: pg, label: "PostgreSQL"}
          - {id: lite, label: "SQLite"}
    - text: "postgres it is"
      when: "pg"
"""


async def test_a_use_child_asking_pauses_its_caller_and_the_flow_level_decides(tmp_path) -> None:
    h = Harness(tmp_path, USE_CHILD, SCRIPT)
    asked_in: list[tuple[str, str | None]] = []

    def where(event) -> None:  # noqa: ANN001
        if event.kind == "raised":  # the broker tells subscribers from the asking task
            frame = current()
            asked_in.append((asyncio.current_task().get_name(), frame.agent if frame else None))

    h.broker.subscribe(where)
    handle = h.start()
    pending = await h.pending()
    assert pending.escalation.agent == "helper"
    # The person is asked from the run's own task, in the caller's agent call after its ADK run
    # paused on the `helper` tool call: not inside the tool, in the child's call.
    assert asked_in == [(f"run {handle.id}", "lead")]
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="pg"), ResolvedBy.HUMAN)
    assert (await h.finish(handle)).value == "done", handle.error
    assert handle.result == "lead done: helper said postgres"
    assert [d["selectedOption"] for d in h.events(handle, "decision")] == ["pg"]
