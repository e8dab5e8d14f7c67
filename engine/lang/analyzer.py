"""Semantic checks (filled in below the milestone)."""

from __future__ import annotations

from engine.lang.diagnostics import Diagnostic
from engine.lang.semantics import ProgramInfo


def analyze(info: ProgramInfo) -> list[Diagnostic]:
    return []
