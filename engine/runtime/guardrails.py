"""Simple built-in guardrails for handlers: `mask NAME` rewrites the message in flight.

Names: `pii` (emails, phone numbers, card numbers), `email`, `phone`, `credit_card`,
`secrets` (API-key-like tokens). Each replaces a match with `[MASKED_<KIND>]`.
"""

from __future__ import annotations

import re

_PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"),
    "credit_card": re.compile(r"\b(?:\d[ -]?){13,19}\b"),
    # +country, area code in parentheses, separators; at least 7 digits in total.
    "phone": re.compile(r"(?<![\w])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){2,4}(?![\w])"),
    "secrets": re.compile(
        r"\b(?:sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
        r"|AIza[0-9A-Za-z_-]{35})\b"
    ),
}
# Order matters: cards before phones (a card number also looks like a long phone number).
GUARDRAILS: dict[str, tuple[str, ...]] = {
    "pii": ("email", "credit_card", "phone"),
    "email": ("email",),
    "phone": ("phone",),
    "credit_card": ("credit_card",),
    "secrets": ("secrets",),
}


class UnknownGuardrail(Exception):
    pass


def mask(guardrail: str, text: str) -> str:
    """`text` with every match of the guardrail's patterns replaced."""
    kinds = GUARDRAILS.get(guardrail.lower())
    if kinds is None:
        raise UnknownGuardrail(f"unknown guardrail {guardrail!r} (known: {', '.join(GUARDRAILS)})")
    for kind in kinds:
        text = _PATTERNS[kind].sub(f"[MASKED_{kind.upper()}]", text)
    return text
