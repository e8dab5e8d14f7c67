"""The agent's pipes, bounded: newline-delimited JSON-RPC read with a cap on each message, and the
last lines of its stderr kept for the one line that says why it failed.

The SDK's own stdio transport reads a line of any length (it keeps reading past the stream's
limit) and logs a traceback for a line that is not JSON; an agent that floods its stdout would
then grow our memory without end. This transport refuses such a line instead, and the failure
names the cause.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

MAX_MESSAGE = 8 * 1024 * 1024  # one JSON-RPC message (a file's content travels in one)
STDERR_LINES = 20  # the agent's last stderr lines, for the failure's message
STDERR_LINE = 300  # characters kept of each


class WireError(Exception):
    """The agent broke the framing: one line of cause (its message is shown as it is)."""


class BoundedTransport:
    """The SDK's message-level `Transport` over the agent's stdout (reader) and stdin (writer).

    A line over `MAX_MESSAGE` or one that is not a JSON object ends the stream: `failure` says
    why (the connection then fails every request waiting on the agent)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limit: int = MAX_MESSAGE) -> None:
        self._reader = reader
        self._writer = writer
        self._limit = limit
        self._lines = 0
        self.failure: WireError | None = None
        self.ended = asyncio.Event()  # the stream ended: the agent's end of file, or a failure

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        self._writer.write(data)
        await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        message = await self._next()
        if message is None:
            self.ended.set()
        return message

    async def _next(self) -> dict[str, Any] | None:
        while self.failure is None:
            line = await self._read_line()
            if line is None:
                return None
            self._lines += 1
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.failure = WireError(f"sent a malformed message (not JSON) on line {self._lines} of its output: "
                                         f"{line[:80].decode('utf-8', 'replace')!r}")
                return None
            if not isinstance(message, dict):
                self.failure = WireError(f"sent a malformed message (not a JSON object) on line {self._lines} of its output")
                return None
            return message
        return None

    async def close(self) -> None:
        try:
            if self._writer.can_write_eof():
                self._writer.write_eof()
        except (OSError, RuntimeError):
            pass
        self._writer.close()

    async def _read_line(self) -> bytes | None:
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None  # the last line without its newline, then the end
        except asyncio.LimitOverrunError:
            self.failure = WireError(f"flooded its output: a message longer than {self._limit // (1024 * 1024)} MiB "
                                     f"on line {self._lines + 1}")
            return None
        except (ConnectionError, OSError) as exc:
            self.failure = WireError(f"its output broke off ({exc})")
            return None


class StderrTail:
    """Reads the agent's stderr to its end, keeping only its last lines, each cut short: an agent
    that writes without end costs a few kilobytes."""

    def __init__(self, stream: asyncio.StreamReader | None) -> None:
        self.lines: deque[str] = deque(maxlen=STDERR_LINES)
        self.task = asyncio.ensure_future(self._drain(stream)) if stream is not None else None

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        partial = b""
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                break
            parts = (partial + chunk).split(b"\n")
            partial = parts.pop()[-4 * STDERR_LINE:]
            for part in parts:
                self._keep(part)
        if partial:
            self._keep(partial)

    def _keep(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").strip()
        if text:
            self.lines.append(text[:STDERR_LINE])

    def last(self) -> str:
        """Its last non-empty line (a crash's own words), or ''."""
        return self.lines[-1] if self.lines else ""

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
