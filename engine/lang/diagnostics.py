"""Diagnostics: what the compiler reports, and their text and JSON renderings.

Codes E0001-E0016 and W0002 keep the origin project's meaning; E0017+ are ours (see
docs/language.md for the table).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Mapping

from engine.text_safety import visible

# code -> short title, used in docs and tests to keep the table honest.
CODES: dict[str, str] = {
    "E0001": "undefined reference",
    "E0002": "variable used before assignment",
    "E0003": "duplicate definition",
    "E0004": "type mismatch",
    "E0005": "import not found",
    "E0006": "circular import",
    "E0007": "syntax error",
    "E0008": "bad indentation",
    "E0009": "action not allowed here",
    "E0010": "missing required property",
    "E0011": "circular agent reference",
    "E0012": "continue outside a loop",
    "E0013": "prompt without body",
    "E0014": "conflicting prompt modifiers",
    "E0015": "unknown variable in a prompt",
    "E0016": "instruction prompt uses a run-time variable",
    "E0017": "unknown property or value",
    "E0018": "invalid assignment or call target",
    "E0019": "call not allowed in this context",
    "E0020": "cannot read file",
    "E0021": "prompts include each other",
    "E0022": "nests too deeply to run",
    "E0023": "bad ACP agent command",
    "W0002": "agent has both delegate and use",
    "W0003": "program too large to check variables",
    "W0004": "unknown guardrail",
    "W0005": "model without a name",
    "W0006": "variable nothing assigns, read by a handler's guardrail or log",
}


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    column: int
    severity: str  # "error" | "warning"
    code: str
    message: str
    help: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


def error(file: str | Path, line: int, column: int, code: str, message: str, help: str | None = None) -> Diagnostic:
    return Diagnostic(str(file), max(1, line), max(1, column), "error", code, message, help)


def warning(file: str | Path, line: int, column: int, code: str, message: str, help: str | None = None) -> Diagnostic:
    return Diagnostic(str(file), max(1, line), max(1, column), "warning", code, message, help)


def did_you_mean(name: str, candidates: Iterable[str], prefix: str = "") -> str | None:
    """A "did you mean" help line for a close existing name, or None. `prefix` is written before
    the suggestion as the user writes it (`did you mean '$input'?`)."""
    close = difflib.get_close_matches(name, [c for c in candidates if c], n=1, cutoff=0.6)
    return f"did you mean '{prefix}{close[0]}'?" if close else None


def sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.file, d.line, d.column, d.code)


def render_text(diags: Iterable[Diagnostic], sources: Mapping[str, str] | None = None) -> str:
    """`FILE:LINE:COL: error[E0001]: message`, a snippet with a caret, then `help:` lines."""
    sources = sources or {}
    out: list[str] = []
    for d in diags:
        # File names (a folder's files), import paths and names in messages are the file's own
        # text: an escape sequence in them must not reach the terminal.
        out.append(f"{_printable(d.file)}:{d.line}:{d.column}: {d.severity}[{d.code}]: {_printable(d.message)}")
        text = sources.get(d.file)
        if text is not None:
            lines = text.splitlines()
            if 1 <= d.line <= len(lines):
                raw = lines[d.line - 1]
                src = raw.replace("\t", "    ")
                caret = len(raw[: d.column - 1].replace("\t", "    "))  # tabs shown as 4 columns
                gutter = str(d.line)
                out.append(f" {gutter} | {_printable(src)}")
                out.append(f" {' ' * len(gutter)} | {' ' * caret}^")
        if d.help:
            out.append(f"  help: {_printable(d.help)}")
    return "\n".join(out) + ("\n" if out else "")


def _printable(text: str) -> str:
    """Source shown in a terminal: through the one sanitizer (a file may hold anything); one sign
    per control character keeps the caret under its column."""
    return visible(text).replace("\n", "␊")


def render_json(diags: Iterable[Diagnostic]) -> str:
    return json.dumps([asdict(d) for d in diags], indent=2)
