"""`escalate serve` in a real headless Chromium: the token is required, the decision pane shows,
a key answers it and the agent resumes; a cookie the browser sends to another port opens nothing;
a second browser session is announced in the pages already open."""

from __future__ import annotations

import asyncio
import http.server
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.sync_api import sync_playwright

from engine.durable.database import Database
from tests.web.browser import VIEWPORT, Terminal, launch
from tests.web.serving import auth_refactor, serve
from tui.web.server import REFUSED

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]  # a console per tab, on a shared 2-core host

PANE = ("DECISION REQUIRED [auth-refactor]", "Should I refactor the auth module to use JWT", "[1] Yes, use JWT (recommended)",
        "[2] No, keep sessions", "Let agent decide", "Skip this task", "Custom response...")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def context(browser) -> Iterator[Any]:
    """A browser profile of its own (its own cookies), as another person's browser would be."""
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        yield ctx
    finally:
        ctx.close()


def database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'escalate.db'}"


def wait_until(check: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")


def pending(url: str) -> list[dict]:
    db = Database(url)
    try:
        return db.pending_escalations()
    finally:
        db.close()


def test_without_the_token_the_browser_gets_nothing_and_the_token_works_once(tmp_path, browser, context) -> None:
    served = serve(tmp_path, *auth_refactor("--db", database(tmp_path)))
    try:
        page = context.new_page()
        terminal = Terminal(page)
        for url in (served.base + "/", served.base + "/?token=guess", served.base + "/static/js/textual.js"):
            response = page.goto(url)
            assert response.status == 403, url
            assert page.inner_text("body").strip() == REFUSED.strip()
        assert terminal.socket is None  # no console was opened

        assert page.goto(served.link).status == 200
        terminal.wait_for("Workflows", "auth-refactor", "q Quit")  # the console, drawn in the page
        assert page.url == served.base + "/"  # the token has left the address bar
        page.go_back()  # the link's page was replaced in the history: back goes to the page before it
        assert "token=" not in page.url

        other = browser.new_context(viewport=VIEWPORT)  # another browser, the same link
        try:
            elsewhere = other.new_page()
            response = elsewhere.goto(served.link)
            assert response.status == 403 and elsewhere.inner_text("body").strip() == REFUSED.strip()
        finally:
            other.close()
    finally:
        code, err = served.stop()
    assert code == 0, err


def test_a_run_waiting_in_the_database_is_answered_in_the_browser_and_its_agent_resumes(tmp_path, context) -> None:
    url = database(tmp_path)
    # The run waits in another process (`run --wait`), as on a server or in CI.
    waiting = subprocess.Popen([sys.executable, "-m", "engine", "run", *auth_refactor("--input", "Fix login", "--wait",
                                                                                      "--db", url)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    served = None
    try:
        (esc,) = wait_until(lambda: pending(url), "the run raised its escalation")
        served = serve(tmp_path, *auth_refactor("--db", url))
        page = context.new_page()
        terminal = Terminal(page)
        page.goto(served.link)
        terminal.wait_for(*PANE, "Inbox (1)")
        terminal.press("2")  # No, keep sessions
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err
        assert out.startswith("Plan: keep server sessions")  # the agent went on with the browser's answer
        terminal.wait_for("Inbox (0)")
        db = Database(url)
        try:
            (row,) = db.escalations_of(esc["run_id"])
            assert (row["id"], row["status"], row["resolved_by"]) == (esc["id"], "decided", "human")
            assert row["decision"]["selectedOption"] == "sessions"
        finally:
            db.close()

        code, err = served.stop()  # SIGTERM with the browser session open
        served = None
        assert code == 0, err
        assert "browser session 1: console closed" in err and err.rstrip().endswith("escalate serve: stopped")
        page.wait_for_selector("text=Session ended", state="visible", timeout=120_000)  # the page says so
        assert terminal.closed
        assert not consoles(url)
    finally:
        waiting.kill()
        if served is not None:
            served.stop()


def test_serve_run_starts_the_run_once_and_a_closed_tab_leaves_it_waiting(tmp_path, context) -> None:
    url = database(tmp_path)
    served = serve(tmp_path, *auth_refactor("--run", "--input", "Fix login", "--db", url))
    try:
        first = context.new_page()
        terminal = Terminal(first)
        first.goto(served.link)
        terminal.wait_for(*PANE)
        (esc,) = pending(url)
        first.close()  # the tab goes: its console quits, the run stays waiting in the database

        wait_until(lambda: not consoles(url), "the tab's console quit", timeout=120)
        assert _runs(url)[0]["status"] in ("running", "waiting")  # left for later, not cancelled
        second = context.new_page()  # the same browser (its cookie), a new tab: a console without --run
        terminal = Terminal(second)
        second.goto(served.base + "/")
        terminal.wait_for(*PANE)  # the same decision, continued by this console
        terminal.press("Enter")  # the recommended option
        terminal.wait_for("result: Plan: move auth to JWT")
        (run,) = _runs(url)  # started once, by the first session only
        assert run["status"] == "done"
        db = Database(url)
        try:
            (row,) = db.escalations_of(run["run_id"])  # raised once, answered once
            assert (row["id"], row["resolved_by"], row["decision"]["selectedOption"]) == (esc["id"], "human", "jwt")
        finally:
            db.close()
    finally:
        code, err = served.stop()
    assert code == 0, err
    assert "browser session 1: console closed" in err and "browser session 2: console closed" in err


def _runs(url: str) -> list[dict]:
    db = Database(url)
    try:
        return db.list_runs(include_finished=True)
    finally:
        db.close()



def consoles(url: str) -> list[int]:
    """The console processes on this database (those `serve` started for its browser sessions:
    they get the database as $ESCALATE_DB)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # not a process, not ours, or gone meanwhile
            continue
        if b"console" in argv and b"ESCALATE_DB=" + url.encode() in environment:
            assert url.encode() not in b" ".join(argv)  # not on its command line
            found.append(int(entry.name))
    return found


class _Thief(http.server.BaseHTTPRequestHandler):
    """A server another local user runs on another port: it keeps the cookies it is sent."""

    cookies: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).cookies.append(self.headers.get("Cookie", ""))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<p>nothing here</p>")

    def log_message(self, *_args: Any) -> None:
        pass


async def _replay(base: str, cookie: str, own_origin: str) -> list[int]:
    """What the thief can do with the cookie: load the page (its one-time secret is in it) and
    open the console's websocket, with its own Origin and with the console's, forged."""
    statuses = []
    async with aiohttp.ClientSession(headers={"Cookie": cookie}) as replay:
        async with replay.get(base + "/") as page:
            (url,) = re.findall(r'data-session-websocket-url="([^"]+)"', await page.text())
        for origin in (own_origin, base):
            try:
                async with replay.ws_connect(url, headers={"Origin": origin}) as socket:
                    await socket.send_json(["stdin", "1"])  # "Yes, use JWT"
                    statuses.append(101)
            except aiohttp.WSServerHandshakeError as exc:
                statuses.append(exc.status)
    return statuses


def test_a_cookie_sent_to_another_port_opens_nothing_and_a_second_session_is_announced(tmp_path, context) -> None:
    url = database(tmp_path)
    served = serve(tmp_path, *auth_refactor("--run", "--input", "Fix login", "--db", url))
    thief = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Thief)
    threading.Thread(target=thief.serve_forever, daemon=True).start()
    try:
        page = context.new_page()
        terminal = Terminal(page)
        page.goto(served.link)
        terminal.wait_for(*PANE)
        assert page.url == served.base + "/"  # the token left the address bar

        visit = context.new_page()  # the person opens another local server, in the same browser
        visit.goto(f"http://127.0.0.1:{thief.server_address[1]}/")
        cookie = _Thief.cookies[0]  # (then /favicon.ico)
        assert "escalate_session=" in cookie  # a cookie carries no port: the browser sent it there
        with ThreadPoolExecutor(1) as elsewhere:  # Playwright's loop runs in this thread
            statuses = elsewhere.submit(asyncio.run, _replay(served.base, cookie,
                                                             f"http://127.0.0.1:{thief.server_address[1]}")).result()
        assert statuses == [403, 403]
        assert len(pending(url)) == 1  # still waiting: the thief decided nothing
        visit.close()

        second = context.new_page()  # a second browser session: the first page says so
        Terminal(second)
        second.goto(served.base + "/")
        page.wait_for_selector("text=Browser session 2 opened at", timeout=120_000)
        second.wait_for_selector("text=This is browser session 2; 1 other(s) open.", timeout=120_000)

        terminal.press("2")  # the real page still decides: No, keep sessions
        terminal.wait_for("result: Plan: keep server sessions")
        (run,) = _runs(url)
        db = Database(url)
        try:
            (row,) = db.escalations_of(run["run_id"])
            assert (row["resolved_by"], row["decision"]["selectedOption"]) == ("human", "sessions")
        finally:
            db.close()
    finally:
        thief.shutdown()
        code, err = served.stop()
    assert code == 0, err


BESIDE = """() => {  // a point of the page outside the terminal (its grid leaves a margin), or null
  for (const [x, y] of [[innerWidth - 1, innerHeight - 1], [innerWidth - 1, 0], [0, innerHeight - 1]]) {
    const hit = document.elementFromPoint(x, y);
    if (hit && !hit.closest(".xterm")) return [x, y];
  }
  return null;
}"""


def test_the_keys_work_without_a_click_and_after_a_click_beside_the_terminal(tmp_path, context) -> None:
    """Issue 27, item 6: keys did nothing until the pane was clicked, and a click beside it took
    them away. Nothing here focuses the terminal: the keys go where a person's would."""
    url = database(tmp_path)
    waiting = subprocess.Popen([sys.executable, "-m", "engine", "run", *auth_refactor("--input", "Fix login", "--wait",
                                                                                      "--db", url)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    served = None
    try:
        wait_until(lambda: pending(url), "the run raised its escalation")
        served = serve(tmp_path, *auth_refactor("--db", url))
        page = context.new_page()
        terminal = Terminal(page)
        page.goto(served.link)
        terminal.wait_for(*PANE, "Inbox (1)")
        beside = page.evaluate(BESIDE)
        assert beside is not None, "the terminal covers the whole page"
        page.mouse.click(*beside)  # the terminal never had a click: its keys came with the page
        page.keyboard.press("2")  # No, keep sessions
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0 and out.startswith("Plan: keep server sessions"), err
    finally:
        waiting.kill()
        if served is not None:
            served.stop()
