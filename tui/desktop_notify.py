"""A desktop notification through the terminal itself: OSC 9 (iTerm2, WezTerm, kitty, Ghostty,
Windows Terminal) or OSC 777 (foot, urxvt, VTE terminals such as GNOME Terminal), inside tmux
wrapped for its passthrough (shown where `allow-passthrough` is on).

`ESCALATE_NOTIFY` picks: `osc9`, `osc777` or `off`; unset, the terminal's own variables decide.
A terminal that knows neither sequence ignores it (they are OSC strings, never shown as text).

The console's channels (the bell, the terminal's title, the desktop notification) are Notifiers
(engine/escalation/notify), registered on the broker's registry like the rules' command.
"""

from __future__ import annotations

import contextvars
from typing import Callable, Mapping

from engine.escalation.notify import Attention, Notifiers
from engine.text_safety import visible
from tui.format import one_line

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


class Bell:
    """The terminal's bell when a decision starts waiting: a human is needed."""

    def __init__(self, ring: Callable[[], None]) -> None:
        self.ring = ring

    def __call__(self, attention: Attention) -> None:
        if attention.raised:
            self.ring()


class WaitingTitle:
    """The console's title (and the terminal's) says how many decisions wait."""

    def __init__(self, show: Callable[[str], None], base: str) -> None:
        self.show = show
        self.base = base

    def __call__(self, attention: Attention) -> None:
        waiting = attention.waiting
        self.show(f"{self.base} · {waiting} decision{'s' if waiting != 1 else ''} waiting" if waiting else self.base)


class DesktopNotification:
    """A desktop notification for the last decision that started waiting."""

    def __init__(self, write: Callable[[str], None], environ: Mapping[str, str]) -> None:
        self.write = write
        self.environ = environ

    def __call__(self, attention: Attention) -> None:
        if attention.raised:
            esc = attention.raised[-1].escalation
            title = f"DECISION REQUIRED [{one_line(esc.task_id, 40)}]"
            self.write(desktop_notification(title, f"{esc.reason.value}: {one_line(esc.question, 160)}", self.environ))


def register_console(registry: Notifiers, ring: Callable[[], None], show_title: Callable[[str], None],
                     write: Callable[[str], None], *, base_title: str, environ: Mapping[str, str]) -> Callable[[], None]:
    """Register the console's three channels, called in the current context (the app's: Textual
    needs its active app); returns the call that unregisters them all."""
    context = contextvars.copy_context()
    stops = [registry.register(channel, context)
             for channel in (WaitingTitle(show_title, base_title), Bell(ring), DesktopNotification(write, environ))]

    def unregister() -> None:
        for stop in stops:
            stop()

    return unregister
