"""The rules' `notify: {command: [...]}`: a program told about each decision that waits for a
human (a chat or phone relay), with the escalation as one JSON object on its stdin.

The command is run directly, never through a shell (its words are the program and arguments as
written); it gets `timeout` seconds and is then killed with its process group. A command that
is missing, fails or hangs is logged (logger `escalate.notify`), never raised: telling someone
is a courtesy, the decision still waits on screen.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from typing import Any

from engine.escalation.broker import RAISED, BrokerEvent, EscalationBroker
from engine.escalation.desk import escalation_event_fields
from rules.model import NotifyCommand

log = logging.getLogger("escalate.notify")
MAX_LOGGED = 300  # characters of a failing command's stderr kept in the log
MAX_RUNNING = 8  # commands at once; beyond that an escalation is logged as not relayed


def notify_payload(event: BrokerEvent) -> bytes:
    """The JSON the command reads: the contract's `human_escalation` fields, plus the run and
    the deadline (seconds since the epoch, null when it waits for a human)."""
    pending = event.pending
    fields: dict[str, Any] = {"type": "human_escalation", "runId": pending.escalation.run_id}
    fields.update(escalation_event_fields(pending.escalation, pending.policy))
    fields["deadline"] = pending.policy.deadline
    return (json.dumps(fields, ensure_ascii=False) + "\n").encode("utf-8")


class NotifyHook:
    """A broker subscriber that runs the command for each escalation still waiting once the
    loop turn that raised it is over (an answers file or a rule may answer it at once)."""

    def __init__(self, command: NotifyCommand, broker: EscalationBroker) -> None:
        self.command = command
        self.broker = broker
        self._tasks: set[asyncio.Task[None]] = set()
        broker.subscribe(self)  # for the broker's life: the engine's

    def __call__(self, event: BrokerEvent) -> None:
        if event.kind != RAISED:
            return
        if len(self._tasks) >= MAX_RUNNING:
            log.warning("notify: %d commands still running; escalation %s not relayed", len(self._tasks), event.pending.escalation.id)
            return
        try:
            task = asyncio.get_running_loop().create_task(self._relay(event), name="escalate notify")
        except RuntimeError:  # no loop running here (a synchronous caller): nothing to run on
            log.warning("notify: no event loop; escalation %s not relayed", event.pending.escalation.id)
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _relay(self, event: BrokerEvent) -> None:
        await asyncio.sleep(0)  # after the raising turn: answered at once means nobody to tell
        esc_id = event.pending.escalation.id
        if all(p.escalation.id != esc_id for p in self.broker.pending()):
            return
        try:
            await run_notify_command(self.command, notify_payload(event))
        except Exception:  # a courtesy must never take a run or the console down
            log.exception("notify: relaying escalation %s failed", esc_id)


async def run_notify_command(command: NotifyCommand, payload: bytes) -> int | None:
    """Run `command` with `payload` on stdin; its exit code, or None when it could not start or
    was killed after `command.timeout` seconds. Failures are logged."""
    program = command.command[0]
    try:
        process = await asyncio.create_subprocess_exec(
            *command.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,  # its own group: killed whole
        )
    except OSError as exc:
        log.warning("notify: cannot run %r: %s", program, exc)
        return None
    try:
        _, err = await asyncio.wait_for(process.communicate(payload), command.timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        _kill_group(process)
        await process.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        log.warning("notify: %r killed after %gs", program, command.timeout)
        return None
    if process.returncode != 0:
        text = err.decode("utf-8", "replace").strip()[-MAX_LOGGED:]
        log.warning("notify: %r exited with %s%s", program, process.returncode, f": {text}" if text else "")
    return process.returncode


def _kill_group(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
