"""Write the README's SVG screenshots from the real console running the bundled demo.

    python -m tui.screenshots [OUT_DIR]      # default: ./screenshots

The demo workflows really run (ADK, scripted models) on a frozen FakeClock, so countdowns and
ages are the same every time; only wall-clock stamps in the event log differ between runs.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Callable

from engine.demo import demo_rules, demo_workflows
from engine.kernel.clock import FakeClock
from rules import load_rules
from tui.app import EscalateApp
from tui.session import ConsoleSession, RunRequest, WorkflowEntry

SIZE = (130, 42)


def demo_app(workspace: Path) -> EscalateApp:
    entries = [WorkflowEntry(p, p.with_suffix(".yaml")) for p in demo_workflows()]
    session = ConsoleSession(entries, rules=load_rules(demo_rules()), clock=FakeClock(0.0), workspace=workspace)
    return EscalateApp(session)


async def _until(pilot, predicate: Callable[[], object], timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise TimeoutError("the demo did not reach the expected state")
        await pilot.pause(0.02)
    await pilot.pause()


async def take(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="escalate-shots-") as scratch:
        app = demo_app(Path(scratch))
        session = app.session
        clock: FakeClock = session.clock  # type: ignore[assignment]

        def shot(name: str) -> None:
            written.append(Path(app.save_screenshot(f"{name}.svg", str(out))))

        async with app.run_test(size=SIZE) as pilot:
            await _until(pilot, app.engine_ready.is_set)
            entry = {e.name: e for e in session.workflows}
            # Finished runs for the main screen and the history.
            for name, text in (("resolver", "escalate is a console"), ("code-search", "where are sessions validated?")):
                handle = app.start(entry[name], RunRequest(None, text))
                await _until(pilot, lambda: handle.finished_at is not None)
            app.start(entry["test-fix"], RunRequest(None, "fix the failing tests"))
            await _until(pilot, lambda: len(session.pending()) == 1)
            clock.advance(30)  # half a minute into the countdown
            await pilot.pause(0.3)
            shot("decision_pane")
            app.start(entry["auth-refactor"], RunRequest(None, "plan the auth change"))
            app.start(entry["deploy-production"], RunRequest(None, "release v1.4.2"))
            await _until(pilot, lambda: len(session.pending()) == 3)
            clock.advance(12)
            await pilot.press("right_square_bracket")
            await pilot.pause(0.3)
            shot("queue")
            # 2 of 3 is the auth refactor: JWT; then the deploy slides in (approve); then the test
            # fix is left (allow 5 s of skew).
            await pilot.press("1", "1", "2")
            await _until(pilot, lambda: all(h.finished_at is not None for h in session.runs))
            app.main.query_one("#runs").focus()
            await pilot.pause(0.3)
            shot("main")
            await pilot.press("h")
            await pilot.pause(0.3)
            shot("history")
            await app.action_quit()
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else Path("screenshots")
    for path in asyncio.run(take(out)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
