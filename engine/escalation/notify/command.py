"""The rules' `notify: {command: [...]}`: a program told about each decision that waits for a
human (a chat or phone relay), with the escalation as one JSON object on its stdin.

The command is run directly, never through a shell (its words are the program and arguments as
written); it gets `timeout` seconds and is then killed with its process group. A command that
is missing, fails or hangs is logged (logger `escalate.notify`), never raised: telling someone
is a courtesy, the decision still waits on screen. Registered like every channel
(engine/escalation/notify/__init__.py): `notifiers(broker).register(CommandNotifier(command))`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from typing import Any

from engine.escalation.desk import escalation_event_fields
from engine.escalation.notify import Attention, log
from engine.kernel.model import PendingEscalation
from rules.model import NotifyCommand

MAX_LOGGED = 300  # characters of a failing command's stderr kept in the log
MAX_RUNNING = 8  # commands at once; beyond that an escalation is logged as not relayed


def notify_payload(pending: PendingEscalation) -> bytes:
    """The JSON the command reads: the contract's `human_escalation` fields, plus the run and
    the deadline (seconds since the epoch, null when it waits for a human)."""
    fields: dict[str, Any] = {"type": "human_escalation", "runId": pending.escalation.run_id}
    fields.update(escalation_event_fields(pending.escalation, pending.policy))
    fields["deadline"] = pending.policy.deadline
    return (json.dumps(fields, ensure_ascii=False) + "\n").encode("utf-8")


class CommandNotifier:
    """The rules' command as a Notifier: run for each decision that started waiting (the
    registry tells only those still waiting after the turn that raised them)."""

    def __init__(self, command: NotifyCommand) -> None:
        self.command = command
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, attention: Attention) -> None:
        for pending in attention.raised:
            if len(self._tasks) >= MAX_RUNNING:
                log.warning("notify: %d commands still running; escalation %s not relayed", len(self._tasks),
                            pending.escalation.id)
                continue
            task = asyncio.get_running_loop().create_task(self._relay(pending), name="escalate notify")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _relay(self, pending: PendingEscalation) -> None:
        try:
            await run_notify_command(self.command, notify_payload(pending))
        except Exception:  # a courtesy must never take a run or the console down
            log.exception("notify: relaying escalation %s failed", pending.escalation.id)


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
