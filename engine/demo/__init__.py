"""The demo workspace `escalate` opens: workflows with scripted models, and a rules file.

Each `NAME.sr` has its offline model script `NAME.yaml` beside it; `rules.yaml` adds the demo's
task override on top of the shipped rules.
"""

from __future__ import annotations

from pathlib import Path

RULES_NAME = "rules.yaml"


def demo_dir() -> Path:
    """The folder holding the demo files: installed beside this module (importlib.resources
    would cost ~4 ms of the console's first frame for the same path)."""
    return Path(__file__).resolve().parent


def demo_workflows() -> list[Path]:
    return sorted(demo_dir().glob("*.sr"))


def demo_rules() -> Path:
    return demo_dir() / RULES_NAME
