"""The commands a person copies from `runs`, `run`'s exit-4 message and `run --wait`: how to
answer a waiting escalation from the shell, then how to continue its run.

Each printed line is one whole command that works pasted as it is: one line per option (a
`a|b` choice would be a shell pipe), ids and `--db` quoted for the shell, and what the line does
after a `#`, which the shell ignores."""

from __future__ import annotations

import shlex
from typing import Sequence

from engine.kernel.model import Option

TEXT_PLACEHOLDER = "..."


def answer_commands(escalation_id: str, options: Sequence[Option], db: str | None = None) -> list[str]:
    """`escalate answer ID --option X`, one per option in their order; for a question without
    options one `--text '...'` (the person types their answer in place of `...`)."""
    head = f"escalate answer {shlex.quote(escalation_id)}"
    if not options:
        return [f"{head} --text {shlex.quote(TEXT_PLACEHOLDER)}{_db(db)}"]
    return [f"{head} {_option(o.id)}{_db(db)}" for o in options]


def resume_command(run_id: str, db: str | None = None) -> str:
    return f"escalate resume {shlex.quote(run_id)}{_db(db)}"


def answer_lines(escalation_id: str, options: Sequence[Option], db: str | None = None,
                 run_id: str | None = None) -> list[str]:
    """The commands to paste, each with what it means as a shell comment: one per option (its
    label, `(recommended)`), then `escalate resume` when `run_id` is given (no process runs it)."""
    notes = [_comment(o.label + (" (recommended)" if o.recommended else "")) for o in options] or \
        [f"your answer in place of {TEXT_PLACEHOLDER}"]
    pairs = list(zip(answer_commands(escalation_id, options, db), notes))
    if run_id is not None:
        pairs.append((resume_command(run_id, db), "then continue the run"))
    return pasteable(pairs)


def pasteable(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """`command   # note` lines, the notes aligned."""
    width = max((len(command) for command, _ in pairs), default=0)
    return [f"{command:<{width}}   # {note}" for command, note in pairs]


def _option(option_id: str) -> str:
    """`--option ID`, or `--option=ID` for an id that argparse would take for a flag (`-x`)."""
    quoted = shlex.quote(option_id)
    return f"--option={quoted}" if option_id.startswith("-") else f"--option {quoted}"


def _comment(label: str) -> str:
    """An option's label is the agent's text: on one line, so that nothing in it can become a
    command of its own when pasted (a newline would end the comment)."""
    return " ".join(label.split()) or "-"


def _db(db: str | None) -> str:
    """The same `--db` the person gave, so that the line works pasted as it is."""
    return f" --db {shlex.quote(db)}" if db else ""
