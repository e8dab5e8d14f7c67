"""Write the README's SVG screenshots from the real console running the bundled demo.

    python -m tui.screenshots [OUT_DIR]      # default: ./screenshots
    python -m tui.screenshots [OUT_DIR] --claude-project DIR   # and claude-code-request.svg

The demo workflows really run (ADK, scripted models) on a frozen FakeClock, so countdowns and
ages are the same every time; only wall-clock stamps in the event log differ between runs.

The Claude Code request is the real hook (`escalate hook claude`, fed Claude Code's PreToolUse
JSON for Bash) in a project at DIR, whose path the decision pane shows (the rule's file): a
folder that does not exist yet (say /home/dev/shop), made for the picture and removed after.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
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


ASK_TOUCH = """escalationRules:
  global:
    - pattern: "touch"
      action: ask_user
      timeout: 600
"""


async def take_claude(out: Path, project: Path) -> Path:
    """The console holding a Claude Code session's request (the real hook, in a project at
    `project`, which must not exist: it is made and removed)."""
    from engine.kernel.clock import RealClock
    from rules.loader import load_layered

    if project.exists():
        raise SystemExit(f"{project} exists: give a folder to make (and remove) for the picture")
    out.mkdir(parents=True, exist_ok=True)
    made = project
    while not made.parent.exists():  # the first folder made for it: removed after
        made = made.parent
    project.mkdir(parents=True)
    try:
        (project / ".escalate").mkdir()
        (project / ".escalate" / "rules.yaml").write_text(ASK_TOUCH)
        with tempfile.TemporaryDirectory(prefix="escalate-shots-") as scratch:
            url = f"sqlite:///{Path(scratch) / 'escalate.db'}"
            call = {"session_id": "3f0c9b52-7d1e-4a8e-9c61-2b7f5d0e8a14", "cwd": str(project),
                    "hook_event_name": "PreToolUse", "permission_mode": "default", "tool_name": "Bash",
                    "tool_input": {"command": "touch marker", "description": "make the marker"},
                    "tool_use_id": "toolu_01"}
            session = ConsoleSession([], rules=load_layered(None, workspace=project), clock=RealClock(),
                                     workspace=project, db_url=url)
            app = EscalateApp(session)
            async with app.run_test(size=SIZE) as pilot:
                await _until(pilot, app.engine_ready.is_set, 120)
                hook = subprocess.Popen([sys.executable, "-m", "engine", "hook", "claude", "--db", url], cwd=project,
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    assert hook.stdin is not None
                    hook.stdin.write(json.dumps(call).encode())
                    hook.stdin.close()
                    await _until(pilot, session.pending, 120)
                    await pilot.pause(0.5)
                    written = Path(app.save_screenshot("claude-code-request.svg", str(out)))
                finally:
                    hook.terminate()  # its request is withdrawn
                    hook.wait()
                await _until(pilot, lambda: not session.pending(), 60)
                await app.action_quit()
    finally:
        shutil.rmtree(made)
    return written


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    project = None
    if "--claude-project" in args:
        at = args.index("--claude-project")
        project = Path(args[at + 1]).absolute()
        del args[at:at + 2]
    out = Path(args[0]) if args else Path("screenshots")
    for path in asyncio.run(take(out)):
        print(path)
    if project is not None:
        print(asyncio.run(take_claude(out, project)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
