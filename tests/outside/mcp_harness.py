"""The `mcp` package's own client against the real `escalate mcp`: a subprocess over stdio, or
the `--http` server on 127.0.0.1 with its printed URL; and the shell that answers (`escalate
answer`, `escalate runs`: run in this process, tests/cli_here.py, another than the servers'),
all on one SQLite file of the test's."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from engine.durable.database import Database
from tests.cli_here import escalate_here

WAIT = 60.0  # the longest a test waits for something another process does


@dataclass
class Desk:
    """A project folder and its database, where the MCP servers of a test ask."""

    project: Path
    db_url: str
    errlog: Path  # every server's stderr, appended (a test checks it holds no traceback)
    progress: list[tuple[float, str | None]] = field(default_factory=list)

    @classmethod
    def make(cls, tmp_path: Path) -> "Desk":
        project = tmp_path / "proj"
        project.mkdir()
        return cls(project, f"sqlite:///{tmp_path / 'escalate.db'}", tmp_path / "servers.log")

    def env(self) -> dict[str, str]:
        return {**os.environ, "ESCALATE_DB": self.db_url}

    def command(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "engine", "mcp", *extra]

    @asynccontextmanager
    async def stdio(self, *extra: str) -> AsyncIterator[Client]:
        """A client of a fresh `escalate mcp` subprocess (the SDK starts and ends it)."""
        params = StdioServerParameters(command=sys.executable, args=self.command(*extra)[1:], env=self.env(),
                                       cwd=self.project)
        with self.errlog.open("a") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield client

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, message))

    def escalate(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """`escalate runs|answer ARGS` on the desk's database (neither starts an event loop: called
        from the test's own)."""
        return escalate_here(*argv, "--db", self.db_url, cwd=self.project)

    def rows(self) -> list[dict[str, Any]]:
        """Every escalation in the database, oldest first."""
        db = Database(self.db_url)
        try:
            runs = [r["run_id"] for r in db.list_runs(include_finished=True)]
            return sorted((row for run in runs for row in db.escalations_of(run)), key=lambda r: r["created"])
        finally:
            db.close()

    async def listed(self, count: int = 1) -> list[dict[str, Any]]:
        """The pending escalations, once `escalate runs` lists `count` of them."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            out = self.escalate("runs", "--format", "json")
            if out.returncode == 0:
                found = [p for run in json.loads(out.stdout) for p in run["pending"]]
                if len(found) >= count:
                    return found
            await asyncio.sleep(0.2)
        raise AssertionError(f"{count} escalation(s) were not listed within {WAIT} s")

    def answer(self, esc_id: str, *how: str) -> str:
        out = self.escalate("answer", esc_id, *how)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def server_errors(self) -> str:
        return self.errlog.read_text() if self.errlog.exists() else ""


def call(client: Client, desk: Desk, **arguments: Any) -> "asyncio.Task[Any]":
    """`escalate_to_human` called in a task of its own (it waits for a person)."""
    return asyncio.ensure_future(client.call_tool("escalate_to_human", arguments, progress_callback=desk.on_progress))


def question(**extra: Any) -> dict[str, Any]:
    """Seed 004's example escalation, as a model would call the tool."""
    return {"reason": "architecture_decision", "question": "Use JWT instead of sessions?",
            "context": "Touches src/api/auth.ts and 5 tests",
            "options": [{"id": "opt1", "label": "Yes, use JWT", "recommended": True},
                        {"id": "opt2", "label": "No, keep sessions", "description": "less churn"}],
            "allowAgentDecision": False, **extra}


@dataclass
class HttpServer:
    proc: subprocess.Popen[str]
    url: str  # as printed: with the one-time token

    @property
    def base(self) -> str:
        return self.url.split("?")[0]

    def stop(self) -> tuple[int, str]:
        """SIGTERM; (exit code, stderr)."""
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err


def start_http(desk: Desk, *extra: str) -> HttpServer:
    proc = subprocess.Popen(desk.command("--http", "--port", "0", *extra), cwd=desk.project, env=desk.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("http://"):
        proc.kill()
        raise AssertionError(f"no URL printed: {url!r} {proc.communicate()[1]}")
    return HttpServer(proc, url)
