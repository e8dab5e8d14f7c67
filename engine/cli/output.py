"""What every command shares: the contract's exit codes and the one way messages are written.
Apart from engine/cli/main.py, which imports each command on demand, so that the commands do
not import main back."""

from __future__ import annotations

import sys
from typing import TextIO

from engine.text_safety import visible

# Exit codes of the contract.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def write_line(message: str, stream: TextIO | None = None) -> None:
    """`message` and one newline on `stream` (stderr unless given): how every command writes
    its messages. They quote file, task and agent names, agent text and input files, so control
    characters in them are shown as signs, never obeyed by the terminal (engine/text_safety.py)."""
    (stream or sys.stderr).write(visible(message.rstrip("\n")) + "\n")
