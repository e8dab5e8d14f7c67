"""`escalate serve` as a real process: start it, read its link, stop it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LINK = re.compile(r"^http://(?P<host>[^/:]+):(?P<port>\d+)/\?token=(?P<token>[A-Za-z0-9_-]{43})$")
DEMO = Path(__file__).parents[2] / "engine" / "demo"


@dataclass
class Served:
    process: subprocess.Popen[str]
    link: str
    host: str
    port: int

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, str]:
        """Signals the server; its exit code and its stderr."""
        self.process.send_signal(signum)
        try:
            _, err = self.process.communicate(timeout=timeout)
        finally:
            self.process.kill()
        return self.process.returncode, err


def serve(cwd: Path, *argv: str) -> Served:
    """`escalate serve ARGV --port 0` started in `cwd`, once it printed its link."""
    process = subprocess.Popen([sys.executable, "-m", "engine", "serve", *argv, "--port", "0"], cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline().strip() if process.stdout else ""
    match = LINK.match(line)
    if match is None:
        process.kill()
        _, err = process.communicate()
        raise AssertionError(f"no link printed: {line!r}; stderr: {err}")
    return Served(process, line, match["host"], int(match["port"]))


def auth_refactor(*extra: str) -> list[str]:
    """The demo's architecture decision (options jwt, recommended, and sessions)."""
    return [str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"), *extra]
