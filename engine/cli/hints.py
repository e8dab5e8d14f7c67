"""The commands a person copies from `runs`, `run`'s exit-4 message and `run --wait`: how to
answer a waiting escalation from the shell, then how to continue its run."""

from __future__ import annotations

import shlex
from typing import Sequence


def answer_command(escalation_id: str, option_ids: Sequence[str], db: str | None = None) -> str:
    """`escalate answer ID --option a|b` (pick one of the ids), or `--text '...'` for a question
    without options. Ids are quoted when the shell would read them otherwise."""
    how = "--option " + "|".join(shlex.quote(o) for o in option_ids) if option_ids else "--text '...'"
    return f"escalate answer {shlex.quote(escalation_id)} {how}{_db(db)}"


def resume_command(run_id: str, db: str | None = None) -> str:
    return f"escalate resume {shlex.quote(run_id)}{_db(db)}"


def _db(db: str | None) -> str:
    """The same `--db` the person gave, so that the line works pasted as it is."""
    return f" --db {shlex.quote(db)}" if db else ""
