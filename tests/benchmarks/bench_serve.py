"""`escalate serve` in a real headless Chromium (prints numbers; asserts nothing about time).

Each round starts `escalate serve`, opens its one-time link in a fresh browser profile and
answers the demo's auth-refactor decision with a key press:

1. open link -> pane: from `page.goto(link)` to the decision pane drawn in the page (the page,
   textual.js, the websocket, a new console process, the database read, the first frames);
2. key -> ...: from the key's keydown in the page (the page's clock) to the decision written in
   the database by the tab's console, applied by the run (its `decision` event) and the agent's
   next reply (its `agent_result`), as the run recorded them (wall clock, milliseconds).

Two places for the run: `wait`, a `run --wait` process of its own, waiting before the link is
opened (the decision travels through the database: that process polls it every 0.1 s);
`console`, started by `serve --run` in the tab's console (open -> pane then includes starting
the run; the decision goes straight to the agent in that process). The key is pressed at once
when the pane shows, and, in a second series, 5 s later (the console has loaded the runtime
meanwhile: what a key costs once the console has settled).

Run: python tests/benchmarks/bench_serve.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from engine.durable.database import Database  # noqa: E402
from tests.web.browser import VIEWPORT, Terminal, launch  # noqa: E402
from tests.web.serving import auth_refactor, serve  # noqa: E402

PANE = ("DECISION REQUIRED [auth-refactor]", "[2] No, keep sessions")
SETTLE = 5.0  # seconds: the console has loaded the runtime (ADK, ~1 s of imports after its first frame)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    options = parser.parse_args()
    rounds = 2 if options.quick else options.rounds
    print(f"escalate serve in headless Chromium: {rounds} rounds each; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs (a shared machine: figures are noisy)")
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            for where in ("wait", "console"):
                for settle in (0.0, SETTLE):
                    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
                        opened, written, applied, replied = measure(browser, Path(folder), where, rounds, settle)
                    label = f"{where}, key {'at once' if not settle else f'{settle:.0f} s after'}"
                    report(label, "open link -> pane", opened)
                    report(label, "key -> decision in the database", written)
                    report(label, "key -> decision applied by the run", applied)
                    report(label, "key -> agent's next reply", replied)
        finally:
            browser.close()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def measure(browser, folder: Path, where: str, rounds: int, settle: float) -> tuple[list[float], ...]:
    url = f"sqlite:///{folder / 'escalate.db'}"
    opened, written, applied, replied = [], [], [], []
    for round_ in range(rounds):
        waiting = None
        if where == "wait":  # the run waits in a process of its own before the tab opens
            waiting = subprocess.Popen([sys.executable, "-m", "engine", "run",
                                        *auth_refactor("--input", "Fix login", "--wait", "--db", url)],
                                       cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wait_for_pending(url, round_)
            served = serve(folder, *auth_refactor("--db", url))
        else:  # the tab's console starts the run (`serve --run`)
            served = serve(folder, *auth_refactor("--db", url, "--run", "--input", "Fix login"))
        context = browser.new_context(viewport=VIEWPORT)
        # The page's own clock at the key's keydown: Playwright's dispatch is not part of the figure.
        context.add_init_script("document.addEventListener('keydown', () => { window.keyAt = Date.now(); }, true);")
        try:
            page = context.new_page()
            terminal = Terminal(page)
            start = time.monotonic()
            page.goto(served.link)
            opened.append(terminal.wait_for(*PANE, timeout=120) - start)
            run_id = wait_for_pending(url, round_)
            page.wait_for_timeout(settle * 1000)
            terminal.press("2")
            pressed = page.evaluate("window.keyAt") / 1000  # when the page got the key (its keydown)
            written_at, applied_at, replied_at = resumed(url, run_id)
            written.append(written_at - pressed)
            applied.append(applied_at - pressed)
            replied.append(replied_at - pressed)
            if waiting is not None:
                waiting.communicate(timeout=60)
        finally:
            context.close()
            served.stop()
            if waiting is not None:
                waiting.kill()
    return opened, written, applied, replied


def wait_for_pending(url: str, known: int, timeout: float = 120) -> str:
    """The run id of the escalation raised in this round (the `known` earlier ones are decided)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        db = Database(url)
        try:
            rows = db.pending_escalations()
        finally:
            db.close()
        if rows:
            return rows[0]["run_id"]
        time.sleep(0.02)
    raise SystemExit(f"round {known + 1}: no escalation raised in {timeout} s")


def resumed(url: str, run_id: str, timeout: float = 60) -> tuple[float, float, float]:
    """When the tab's console wrote the decision, when the run applied it and when its agent
    replied next (epoch seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        db = Database(url)
        try:
            events = db.events_of(run_id)
            (escalation,) = db.escalations_of(run_id)
        finally:
            db.close()
        decided = [i for i, e in enumerate(events) if e["type"] == "decision"]
        if decided:
            after = [e for e in events[decided[0]:] if e["type"] == "agent_result"]
            if after:
                return escalation["decided_at"], _epoch(events[decided[0]]["time"]), _epoch(after[0]["time"])
        time.sleep(0.02)
    raise SystemExit(f"{run_id}: the agent did not resume within {timeout} s")


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def report(where: str, what: str, values: list[float]) -> None:
    if not values:
        print(f"{where:22} {what:36} (not measured)")
        return
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    print(f"{where:22} {what:36} n={len(ms):2}  median {statistics.median(ms):7.0f} ms  p95 {p95:7.0f} ms  "
          f"max {ms[-1]:7.0f} ms")


if __name__ == "__main__":
    main()
