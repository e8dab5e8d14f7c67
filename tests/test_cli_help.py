"""`escalate --version`, and a help line for every argument of every command (issue 27, item 11)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version

from engine.cli.parser import build_parser


def _parsers(parser: argparse.ArgumentParser, path: str = "escalate") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:  # argparse has no public way to list sub-commands
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, f"{path} {name}")
    return found


def test_every_argument_of_every_command_has_help():
    missing = [f"{path} {'/'.join(a.option_strings) or a.dest}"
               for path, parser in _parsers(build_parser()) for a in parser._actions
               if not isinstance(a, argparse._SubParsersAction) and not a.help]
    assert missing == []


def test_version_prints_the_installed_version():
    done = subprocess.run([sys.executable, "-m", "engine", "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"escalate {version('escalate')}\n", "")
