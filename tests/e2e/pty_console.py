"""`escalate console` in a real pseudo-terminal, everything it writes kept as bytes."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path


class PtyConsole:
    """`escalate console ...` with a pseudo-terminal (120x40) as its stdin, stdout and stderr;
    everything it writes is kept in `output`."""

    def __init__(self, cwd: Path, *args: str, prefix: tuple[str, ...] = ()) -> None:
        """`prefix`: a command the console runs under (e.g. `setpriv ...`)."""
        master, self.tty = pty.openpty()
        self.modes_before = termios.tcgetattr(self.tty)[3]
        fcntl.ioctl(self.tty, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "engine", "console", *args], cwd=cwd, env=env,
                                     stdin=self.tty, stdout=self.tty, stderr=self.tty, start_new_session=True)
        self._master = master
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO: every copy of the terminal's other side is closed
                return
            if not chunk:
                return
            self.output += chunk

    def exit_code(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout)
        self.modes_after = termios.tcgetattr(self.tty)[3]  # the terminal's local modes as it was left
        os.close(self.tty)  # the reader sees the end once the console's copies are closed too
        self._reader.join(10)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for fd in (self.tty, self._master):
            try:
                os.close(fd)
            except OSError:
                pass

    def type(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def wait_for(self, text: bytes, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while text not in self.output:
            if time.monotonic() > end or self.proc.poll() is not None:
                raise AssertionError(f"{text!r} never appeared; last output: {bytes(self.output[-1000:])!r}")
            time.sleep(0.05)
