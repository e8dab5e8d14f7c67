"""Guardrails for handlers: `mask NAME` rewrites the message in flight, `block if NAME` /
`warn if NAME` / `retry with e if NAME` check it.

Built in: `jailbreak` (prompt-injection phrases; a check only), `pii` (emails, phone numbers,
card numbers), `email`, `phone`, `credit_card`, `secrets` (API-key-like tokens); masking replaces
a match with `[MASKED_<KIND>]`. The names are an open set, as in the origin project: a user
registers more (a Python callable) with `register_guardrail`, or ships them in a package under
the entry-point group `escalate.guardrails`. A name nobody registered never triggers and masks
nothing (the analyzer warns, W0004; the run says so once in its log).
"""

from __future__ import annotations

import inspect
import re
from functools import lru_cache
from typing import Any, Callable, Union

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

# `block if jailbreak`: phrases of the usual prompt-injection attempts (case-insensitive).
_JAILBREAK = re.compile(
    r"ignore (?:all |any )?(?:the )?(?:previous|prior|above) (?:instructions|rules|prompts?)"
    r"|disregard (?:all |any )?(?:the )?(?:previous|prior|above|your) (?:instructions|rules)"
    r"|forget (?:all |your )?(?:previous |prior )?instructions"
    r"|you are now (?:dan|in developer mode)|\bdo anything now\b|developer mode enabled"
    r"|\bjailbreak\b|pretend (?:that )?you have no (?:rules|restrictions|guidelines)"
    r"|reveal (?:your|the) (?:system prompt|hidden instructions)",
    re.I,
)

# A user's guardrail takes the message as text and returns either the text to use instead
# (a mask; a check counts as triggered when it changed something) or a bool (triggered or not).
GuardrailFunc = Callable[[str], Union[str, bool]]
ENTRY_POINT_GROUP = "escalate.guardrails"
_registered: dict[str, GuardrailFunc] = {}


class UnknownGuardrail(Exception):
    pass


def register_guardrail(name: str, func: GuardrailFunc) -> None:
    """Make `name` usable in `mask NAME` / `block if NAME` / `warn if NAME` (the origin's
    `register_custom`). It replaces a built-in guardrail of the same name."""
    if not name.isidentifier():
        raise ValueError(f"a guardrail name is a plain name, not {name!r}")
    if not callable(func) or inspect.iscoroutinefunction(func):
        raise TypeError("a guardrail is a plain (not async) function of the message text")
    _registered[name] = func


def unregister_guardrail(name: str) -> None:
    _registered.pop(name, None)


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, Any]:
    """Guardrails installed packages declare (loaded only when one is used)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _user_guardrail(name: str) -> GuardrailFunc | None:
    func = _registered.get(name)
    if func is None and name in _entry_points():
        func = _entry_points()[name].load()
        register_guardrail(name, func)
    return func


def known_guardrails() -> tuple[str, ...]:
    """Every name a check (`block if NAME`) may use."""
    extra = [n for n in (*_registered, *_entry_points()) if n not in GUARDRAILS and n != "jailbreak"]
    return ("jailbreak", *GUARDRAILS, *dict.fromkeys(extra))


def mask_guardrails() -> tuple[str, ...]:
    """Every name `mask NAME` may use (`jailbreak` only checks)."""
    return known_guardrails()[1:] + (("jailbreak",) if "jailbreak" in _registered else ())


def check(name: str, text: str) -> bool | None:
    """Does `text` trip the guardrail? None: no guardrail has that name."""
    func = _user_guardrail(name)
    if func is not None:
        result = func(text)
        return result != text if isinstance(result, str) else bool(result)
    if name == "jailbreak":
        return _JAILBREAK.search(text) is not None
    if name in GUARDRAILS:
        return mask(name, text) != text
    return None


def mask(guardrail: str, text: str) -> str:
    """`text` with every match of the guardrail's patterns replaced. Raises UnknownGuardrail."""
    func = _user_guardrail(guardrail)
    if func is not None:
        result = func(text)
        return result if isinstance(result, str) else text  # a check-only function masks nothing
    kinds = GUARDRAILS.get(guardrail.lower())
    if kinds is None:
        raise UnknownGuardrail(f"unknown guardrail {guardrail!r} (known: {', '.join(mask_guardrails())})")
    for kind in kinds:
        text = _PATTERNS[kind].sub(f"[MASKED_{kind.upper()}]", text)
    return text
