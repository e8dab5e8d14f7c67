"""SIGTERM and SIGHUP end the console the way `q` does, as `escalate run` ends on them.

Without handlers the signal kills the process where it stands: the commands its agents started
(each in its own process group, so the signal does not reach them) run on as orphans, and the
terminal stays in raw mode on the alternate screen with the cursor hidden. Handled, the signal
becomes the app's quit with exit code 128 + the signal: its runs are cancelled (their commands
killed with their process groups) and the app exits through `App.exit`, so Textual's driver
hands the terminal back.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


async def quitting_on_signals(
    main: Coroutine[Any, Any, T], post: Callable[..., object], quit: Callable[[int], Awaitable[None]]
) -> T:
    """Await `main` (the app running) with SIGTERM and SIGHUP handled as `quit(128 + signal)`,
    passed to `post` (the app's `call_later`: the quit then runs in the app's own context).
    Signals after the first change nothing: the quit they ask for is already under way."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def stop(signum: int) -> None:
        received.append(signum)
        if len(received) == 1:  # the first one decides the exit code; the quit is under way
            post(quit, 128 + signum)

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await main
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
