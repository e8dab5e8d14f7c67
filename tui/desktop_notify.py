"""A desktop notification through the terminal itself: OSC 9 (iTerm2, WezTerm, kitty, Ghostty,
Windows Terminal) or OSC 777 (foot, urxvt, VTE terminals such as GNOME Terminal), inside tmux
wrapped for its passthrough (shown where `allow-passthrough` is on).

`ESCALATE_NOTIFY` picks: `osc9`, `osc777` or `off`; unset, the terminal's own variables decide.
A terminal that knows neither sequence ignores it (they are OSC strings, never shown as text).
"""

from __future__ import annotations

from typing import Mapping

from engine.text_safety import visible

MAX_TEXT = 200  # characters of the title and of the body: a notification, not the question


def notification_kind(environ: Mapping[str, str]) -> str:
    """'osc9', 'osc777' or 'off' for the terminal `environ` describes."""
    chosen = environ.get("ESCALATE_NOTIFY", "").strip().lower()
    if chosen in ("osc9", "osc777", "off"):
        return chosen
    term = environ.get("TERM", "")
    if term.startswith(("rxvt", "foot")) or "VTE_VERSION" in environ:
        return "osc777"
    return "osc9"


def _plain(text: str) -> str:
    # A control character would end the sequence early (and start another): signs instead.
    return visible(" ".join(text.split()))[:MAX_TEXT]


def desktop_notification(title: str, body: str, environ: Mapping[str, str]) -> str:
    """The escape sequence that asks the terminal for a desktop notification ('' when off)."""
    kind = notification_kind(environ)
    if kind == "off":
        return ""
    if kind == "osc777":  # fields are separated by ';': none in the title
        sequence = f"\x1b]777;notify;{_plain(title).replace(';', ',')};{_plain(body)}\x07"
    else:
        sequence = f"\x1b]9;{_plain(title)}: {_plain(body)}\x07"
    if environ.get("TMUX"):  # tmux passes a sequence through when it is wrapped, its ESCs doubled
        sequence = "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence
