"""The escalate console: a Textual app over one ConsoleSession.

Runs are asyncio tasks on this app's loop (async workers follow them), so an agent awaiting the
broker's future and the key that resolves it share one loop and one thread. The runtime (ADK)
is imported in a worker after the first frame.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import logging
import os
from pathlib import Path
from typing import Any, Callable

from textual import events, work
from textual.app import App
from textual.actions import SkipAction
from textual.binding import Binding
from textual.reactive import Reactive
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.widgets import Input

from engine.escalation.broker import RAISED, BrokerEvent, EscalationError
from engine.escalation.batch import likeness
from engine.escalation.notify import Attention, notifiers
from engine.kernel.model import Origin, ResolvedBy, Response
from engine.runtime.priority_loop import PriorityLoop
from engine.text_safety import visible
from tui.bridge import Batcher
from tui.decide_actions import DecideActions
from tui.desktop_notify import register_console
from tui.format import decision_summary, duration, has_default, one_line, terminal_title
from tui.messages import EngineFailed, EngineReady, RunFinished
from tui.screens.main import MainScreen
from tui.session import ConsoleSession, RunRequest
from tui.stop_signals import quitting_on_signals
from tui.widgets.decision_pane import DecisionPane

log = logging.getLogger("escalate.console")
APP_TITLE = "escalate"
MAIN_SCREEN_ACTIONS = frozenset({"start_run", "cancel_run", "previous_decision", "next_decision"})
PANE_ACTIONS = frozenset({"teach", "edit_args", "batch"})
RUN_EVENT_BATCH = 0.05  # seconds: run events are drawn at most 20 times a second
QUIT_GRACE = 2.0  # seconds cancelled runs get to unwind when the user quits
RESUMING_AT_ONCE = 50  # interrupted runs handed to DBOS together when the console opens


def _escalate_commands() -> type:
    """The palette's provider, imported when the palette first opens (textual.command is not
    needed for the first frame)."""
    from tui.commands import EscalateCommands

    return EscalateCommands


class EscalateApp(DecideActions, App[int]):
    CSS_PATH = "theme.tcss"
    TITLE = APP_TITLE
    # The header watches the title; App's own reactive would repaint every widget on each change.
    title: Reactive[str] = Reactive(APP_TITLE, compute=False, repaint=False)
    COMMANDS = App.COMMANDS | {_escalate_commands}
    BINDINGS = [
        # Priority: the keys typed right after `s` go to the dialog it opens, not to the list.
        Binding("s", "start_run", "Start run", priority=True),
        Binding("c", "cancel_run", "Cancel run"),
        Binding("d", "focus_decision", "Decision"),
        # Priority (handled on arrival, see DecisionPane); they step aside in text fields.
        Binding("left_square_bracket", "previous_decision", "Prev", priority=True),
        Binding("right_square_bracket", "next_decision", "Next", priority=True),
        Binding("h", "history", "History"),
        Binding("r", "rules", "Rules"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        session: ConsoleSession,
        *,
        run_first: bool = False,
        first_input: str | None = None,
        open_engine: bool = True,
    ) -> None:
        super().__init__()
        self.session = session
        self.main = MainScreen(session)
        self._run_first = run_first
        self._first_input = first_input or ""
        self._open_engine = open_engine
        self.engine_ready = asyncio.Event()
        self.broker_news: Batcher[BrokerEvent] = Batcher(self._apply_broker_events, delay=None, defer=self._news_can_wait)
        self._run_news: Batcher[Any] = Batcher(self._apply_run_events, delay=RUN_EVENT_BATCH)
        self._unsubscribe = session.broker.subscribe(self.broker_news)
        # Whether the pane's decision has alike ones (its `b` key): Textual asks at every
        # bindings refresh, and with 10,000 pending a pass over them all made half an answer's cost.
        self._alike = session.broker.tally(likeness)
        self._decided_on_screen: set[str] = set()  # decided elsewhere while shown, not yet said (_news_can_wait)
        self._stop_ringing: Callable[[], None] = lambda: None  # the console's notifiers, from mount

    def run(self, **options: Any) -> Any:  # type: ignore[override]
        """Run on a PriorityLoop: runs share the console's loop, and a key or a decision is drawn
        before more of their work (`options`: App.run_async's). SIGTERM and SIGHUP quit as `q`
        does, with exit code 128 + the signal."""
        with asyncio.Runner(loop_factory=PriorityLoop) as runner:
            return runner.run(quitting_on_signals(self.run_async(**options), self.call_later, self.action_quit))

    def get_default_screen(self) -> MainScreen:
        return self.main

    def on_mount(self) -> None:
        # Textual's active app/pump for the batched callbacks; one context each, as a context
        # can only be entered once at a time.
        self.broker_news.bind(asyncio.get_running_loop(), contextvars.copy_context())
        self._run_news.bind(asyncio.get_running_loop(), contextvars.copy_context())
        ringing = notifiers(self.session.broker)
        self._stop_ringing = register_console(ringing, self.bell, self._show_title, self._write_terminal,
                                              base_title=APP_TITLE, environ=os.environ)
        waiting = self.session.pending()  # raised before the console was up
        if waiting:
            ringing.tell(Attention(tuple(waiting), len(waiting)))
        if self._open_engine:
            self.call_after_refresh(self._load_engine)  # after the first frame

    @work(group="engine", exit_on_error=False)
    async def _load_engine(self) -> None:
        try:
            if self.session.db_url is not None:  # durable runs: the database before the runtime
                self._tell_bad_rows()
                await self.session.open_database()
                if self.session.store_error:  # a broken --store file: nothing imported, exit 2
                    self.exit(2)
                    return
                self._announce_import()  # the decisions pending: the feed lists them, read off the loop (engine/durable/feed.py)
                self._watch_attention()
            await asyncio.to_thread(self.session.preload)  # ADK: ~1 s of imports, off the loop
            # The start dialog too: `s` and the keys typed right after it reach the dialog.
            await asyncio.to_thread(importlib.import_module, "tui.screens.start_run")
            self.session.open_engine()
        except Exception as exc:  # a broken install must be seen, not a dead console
            self.post_message(EngineFailed(f"{type(exc).__name__}: {exc}"))
            return
        self.session.subscribe_runs(self._run_news)
        self.post_message(EngineReady())
        if self.session.db is not None:
            await self._continue_interrupted()

    def _watch_attention(self) -> None:
        """Outside agents' sessions waiting on their person (a Claude Code permission dialog, an
        idle prompt): told as a decision is, by a toast, the bell and a desktop notification."""
        from tui.attention import AttentionWatch

        AttentionWatch(self.session.db, self._needs_attention).start()  # stops with the database

    def _needs_attention(self, note: Any) -> None:
        from tui.desktop_notify import desktop_notification

        title = f"{one_line(note.agent, 40)} needs attention [{one_line(note.task, 40)}]"
        body = one_line(note.message or note.title or "waiting for its user", 300)
        self.notify(f"{body} ({note.run_id})", title=title, severity="warning", markup=False, timeout=15)
        self.bell()
        self._write_terminal(desktop_notification(title, body, os.environ))

    def _tell_bad_rows(self) -> None:
        """A row of the database that is not what escalate writes is skipped: said once, here."""
        from engine.durable.rows import on_bad_row

        loop = asyncio.get_running_loop()

        def tell(line: str) -> None:
            try:
                loop.call_soon_threadsafe(lambda: self.notify(line, title="A row of the database was skipped",
                                                              severity="warning", markup=False, timeout=20))
            except RuntimeError:  # its loop has closed: this console is gone, and listens no more
                stop()

        stop = on_bad_row(tell)

    def _announce_import(self) -> None:
        if self.session.imported is not None:
            escalations, runs = self.session.imported
            self.notify(f"{escalations} escalations and {runs} runs from {self.session.store} are now in the database "
                        "(imported once; the database keeps the history from now on)", title="History imported",
                        markup=False, timeout=10)

    async def _continue_interrupted(self) -> None:
        """Runs a crash or a quit left behind continue here, from their last recorded step."""
        notices = self.session.host.notices
        if notices:  # a database that is not this user's, runs whose rows are not JSON
            more = f" (and {len(notices) - 1} more: see the log)" if len(notices) > 1 else ""
            self.notify(notices[0] + more, title="Runs not continued", severity="warning", markup=False, timeout=30)
            for line in notices:
                log.warning("%s", line)
        interrupted = await asyncio.to_thread(self.session.interrupted_runs)
        at_once = asyncio.Semaphore(RESUMING_AT_ONCE)

        async def resume(run_id: str) -> None:
            async with at_once:
                try:
                    handle = await self.session.engine.resume_run(run_id)
                except Exception as exc:  # one run that cannot continue (its file is gone) must not stop the others
                    self.notify(f"{run_id}: {exc}", title="A run could not continue", severity="error", markup=False)
                    return
            if handle is not None:
                self.main.add_run(handle)
                self._follow(handle)

        await asyncio.gather(*(resume(run_id) for run_id in interrupted))

    def on_engine_ready(self, _: EngineReady) -> None:
        self.engine_ready.set()
        self.main.refresh_workflows()
        if self._run_first and self.session.workflows:
            self.start(self.session.workflows[0], RunRequest(None, self._first_input))

    def on_engine_failed(self, message: EngineFailed) -> None:
        self.notify(message.error, title="The runtime could not start", severity="error", timeout=30, markup=False)

    # ---- runs --------------------------------------------------------------------------------

    def start(self, entry: Any, request: RunRequest) -> Any:
        """Start a run (of `entry`, or of the request's ACP agent) and follow it in an async
        worker; returns its handle (None on error)."""
        try:
            if request.agent is not None:
                handle = self.session.start_agent(request.agent, input=request.input)
            else:
                handle = self.session.start_run(entry, flow=request.flow, input=request.input)
        except Exception as exc:  # e.g. an unknown flow: one line, the console stays up
            name = request.agent.task if request.agent is not None else entry.name
            self.notify(str(exc), title=f"Cannot start {name}", severity="error", markup=False)
            return None
        self.main.add_run(handle)
        self._follow(handle)
        return handle

    @work(group="runs", exit_on_error=False)
    async def _follow(self, handle: Any) -> None:
        await handle.wait()
        self.post_message(RunFinished(handle))

    def on_run_finished(self, message: RunFinished) -> None:
        handle = message.handle
        if not self.main.ready:  # shutting down
            return
        self._run_news.flush()  # the log is complete when the run shows as ended
        try:
            self.main.run_changed(handle)
        except NoMatches:  # the app is closing and its widgets are gone: nothing to draw
            return
        if handle.error and _status(handle) != "cancelled":  # a cancel was the user's own: told already
            self.notify(handle.error, title=f"{handle.workflow} {_status(handle)}", severity="warning", markup=False)

    def _apply_run_events(self, events: list[Any]) -> None:
        if self.main.ready:
            try:
                self.main.run_events(events)
            except NoMatches:  # the app is closing and its widgets are gone: nothing to draw
                pass

    # ---- decisions ---------------------------------------------------------------------------

    def _news_can_wait(self, event: BrokerEvent) -> bool:
        """An escalation listed, or decided by another process, waits for the loop turn's end: a
        console opening on thousands (the feed's first read), or a thousand answered elsewhere (the
        feed settles them in one turn), redraws once, not once each. The decision on screen
        decided elsewhere is noted now, while the pane still shows it: its user may be answering
        it in this very turn (two consoles, one key each), and is told (`_say_if_decided_elsewhere`)."""
        if event.kind == RAISED:
            return True
        if not event.elsewhere:
            return False
        if self.main.ready and self.main.current_id == event.pending.escalation.id:
            self._decided_on_screen.add(event.pending.escalation.id)
        return True

    def _apply_broker_events(self, events: list[BrokerEvent]) -> None:
        """Everything the broker said since the last loop turn: one queue sync, then a toast
        when the inbox is not on screen (the bell, title and desktop notification are notifiers:
        tui/desktop_notify.py)."""
        if not self.main.ready:
            return  # the main screen syncs itself when it mounts
        pane = self.main.query_one(DecisionPane)
        for event in events:
            if event.kind != RAISED:
                pane.forget(event.pending.escalation.id)
                self._say_if_decided_elsewhere(event, pane)
        raised = [e.pending.escalation for e in events if e.kind == RAISED]
        self.main.sync_decisions([esc.id for esc in raised])
        self.refresh_bindings()  # the pane's keys that apply (a batch of alike ones) may have changed
        if raised and not self._on_main:
            esc = raised[-1]
            self.notify(f"{esc.reason.value}: {one_line(esc.question, 200)} (d: answer)",
                        title=f"DECISION REQUIRED [{one_line(esc.task_id, 40)}]", severity="warning", markup=False)
        for screen in self.screen_stack:
            refresh = getattr(screen, "refresh_history", None)
            if refresh is not None and screen.is_mounted:
                refresh()

    def _say_if_decided_elsewhere(self, event: BrokerEvent, pane: DecisionPane) -> None:
        """The decision on screen ended without the user (its timeout default, a cancelled run):
        they may be typing into it, so say what happened (and who decided, when another console or `escalate answer` did), and keep their next keys harmless."""
        shown = pane.pending
        esc_id = event.pending.escalation.id
        was_shown = esc_id in self._decided_on_screen
        self._decided_on_screen.discard(esc_id)
        if not was_shown and (shown is None or shown.escalation.id != esc_id):
            return
        decision = event.decision
        # Here, a person's answer or a rule they just taught (only teaching settles a waiting
        # request by rule): theirs, and told so by "Rule saved".
        if decision is not None and decision.resolved_by in (ResolvedBy.HUMAN, ResolvedBy.RULE) and not event.elsewhere:
            return
        esc = event.pending.escalation
        what = decision_summary(decision, esc) if decision is not None else "withdrawn (its run ended)"
        if decision is not None and decision.decided_by:  # another console, `escalate answer`: who
            what += f" ({one_line(decision.decided_by, 80)})"
        self.notify(what, title=f"Decision [{one_line(esc.task_id, 40)}] ended without you", severity="warning", markup=False)
        if pane.has_focus_within:
            self.main.park_keyboard()

    def answer(self, escalation_id: str, response: Response, via: str = "console") -> None:
        """The pane's answer, straight to the broker (no message queue between key and agent)."""
        try:
            self.session.answer(escalation_id, response, self.console_audit(escalation_id, via), self.seen(escalation_id))
        except EscalationError as exc:  # resolved meanwhile (timeout, cancel): say so
            self.notify(str(exc), title="Not sent", severity="warning", markup=False)
            self.main.sync_decisions()

    def validate_title(self, title: object) -> str:
        return visible(str(title))  # shown in the headers and as the terminal's title: it may name a task

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every toast through the sanitizer: toasts quote file, task and agent names, and errors
        that quote them (callers showing any pass markup=False too)."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=markup)

    def _show_title(self, title: str) -> None:
        self.title = title
        self._write_terminal(terminal_title(self.title))  # as validated: visible text

    def decision_status(self) -> str:
        """The status line's right side: how long the oldest waiting decision has waited, and,
        while the pane is set aside, when the first default falls (nothing runs out unseen)."""
        waiting = self.session.pending()
        if not waiting:
            return ""
        now = self.session.clock.now()
        status = f"oldest {duration(now - min(p.escalation.created_at for p in waiting))}"
        if self.main.ready and self.main.query_one(DecisionPane).aside:
            deadlines = [p.policy.deadline for p in waiting if p.policy.deadline is not None and has_default(p)]
            if deadlines:
                status += f" · default in {duration(min(deadlines) - now)}"
        return status

    def _write_terminal(self, sequence: str) -> None:
        # Textual has no public way to write an escape sequence (the terminal's title, OSC 2;
        # a desktop notification, OSC 9 / 777): its driver.
        driver = self._driver
        if driver is not None and not self.is_headless and sequence:
            driver.write(sequence)

    # ---- actions -----------------------------------------------------------------------------

    @property
    def _on_main(self) -> bool:
        """The main screen is on top (Screen.is_current is also true under a see-through screen)."""
        stack = self.screen_stack
        return bool(stack) and stack[-1] is self.main

    async def on_event(self, event: events.Event) -> None:
        # A key or a paste while the keyboard waits to go back (MainScreen.KEYBOARD_GRACE):
        # the keyboard goes back first, and the bindings are then looked up from where it is.
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded and self._on_main:
            self.main.settle_keyboard()
        await super().on_event(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The run and queue keys act on the main screen: elsewhere they are off (and not shown).
        if action in PANE_ACTIONS:
            return self._applies_to_decision(action)
        return action not in MAIN_SCREEN_ACTIONS or self._on_main

    def _applies_to_decision(self, action: str) -> bool:
        """The pane's `a` `n` `e` `b` are shown (and act) when they apply to the decision on
        screen: editing, to a tool call's arguments; a batch, to two alike decisions or more."""
        pending = self.main.query_one(DecisionPane).pending if self.main.ready else None
        if pending is None:
            return False
        if action == "edit_args":
            return pending.escalation.origin is Origin.TOOL_APPROVAL and isinstance(pending.extra.get("args"), dict)
        if action == "batch":
            return self._alike.count(pending) > 1
        return True

    def action_start_run(self) -> None:
        self._skip_in_text_fields()
        self.start_workflow(self.main.selected_workflow)

    def start_workflow(self, index: int | None) -> None:
        """Ask for the flow and input of workflow `index` (or for an ACP agent's command: the
        same dialog; with no workflow listed, only that), then start it."""
        entry = self.session.workflows[index] if index is not None else None
        if entry is not None and entry.error:
            self.notify(entry.error, title=f"{entry.name} does not compile", severity="error", markup=False)
            return
        if not self.engine_ready.is_set():
            self.notify("the runtime is still loading", title="One moment")
            return

        def started(request: RunRequest | None) -> None:
            if request is not None:
                self.start(entry, request)

        from tui.screens.start_run import StartRunScreen  # not needed for the first frame

        self.push_screen(StartRunScreen(entry, self.session.workspace or Path.cwd()), started)

    def action_cancel_run(self) -> None:
        """Cancel the run of the decision on screen when the pane has the keyboard, else the
        run selected in the list."""
        handle = self.main.decision_run if self.main.query_one(DecisionPane).has_focus_within else None
        handle = handle or self.main.selected_run
        if handle is None:
            self.notify("no run selected", title="Nothing to cancel")
        elif handle.finished_at is not None:
            self.notify(f"{handle.workflow} {handle.id} has already ended", title="Nothing to cancel", markup=False)
        else:
            handle.cancel()
            self.notify(f"{handle.workflow} {handle.id} cancelled", markup=False)

    def action_focus_decision(self) -> None:
        """The decision pane, from anywhere: other screens are closed to get back to it."""
        if not self.session.pending():
            self.notify("no decision is waiting", title="Inbox empty")
            return
        while not self._on_main and len(self.screen_stack) > 1:
            self.pop_screen()
        self.main.focus_decision()

    def action_previous_decision(self) -> None:
        self._skip_in_text_fields()
        self.main.move_decision(-1)

    def action_next_decision(self) -> None:
        self._skip_in_text_fields()
        self.main.move_decision(+1)

    def _skip_in_text_fields(self) -> None:
        if isinstance(self.focused, Input) or not self._on_main:
            raise SkipAction()

    def action_history(self) -> None:
        from tui.screens.history import HistoryScreen

        if not isinstance(self.screen, HistoryScreen):
            self.push_screen(HistoryScreen(self.session))

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen  # Markdown: imported on first use, not at start

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_quit(self, code: int = 0) -> None:
        """`q` (code 0) or a signal (SIGTERM/SIGHUP: 128 + signal, nobody may be there to ask)."""
        if self.session.db is not None:
            decisions, runs = self.session.active
            if code == 0 and (decisions or runs):
                from tui.screens.confirm_quit import ConfirmQuit

                if not isinstance(self.screen, ConfirmQuit):
                    self.push_screen(ConfirmQuit(decisions, runs), self._quit_confirmed)
                return
            await self._leave(code)
            return
        unfinished = [handle for handle in self.session.runs if handle.finished_at is None]
        for handle in unfinished:
            handle.cancel()
        if unfinished:  # they unwind first, so their withdrawn escalations are recorded
            await asyncio.wait([asyncio.ensure_future(h.wait()) for h in unfinished], timeout=QUIT_GRACE)
        self._unsubscribe()
        self._stop_ringing()
        self.session.close()
        self.exit(code)

    def on_exit_app(self) -> None:
        """Textual's own exit, which skips `action_quit`: in a browser (`escalate serve`) the tab
        closing or the server stopping. Durable runs are left in the database as on `q`, not
        cancelled with the loop (after `_leave` this finds nothing left to do)."""
        self.session.leave()

    async def _quit_confirmed(self, quit_now: bool | None) -> None:
        if quit_now:
            await self._leave(0)

    async def _leave(self, code: int) -> None:
        """Durable runs are left as they are, running or waiting: they continue next time. Their
        tasks here stop first (the commands they started are killed with them)."""
        stopping = self.session.leave()
        if stopping:
            await asyncio.wait(stopping, timeout=QUIT_GRACE)
        self._unsubscribe()
        self.session.close()
        self.exit(code)


def _status(handle: Any) -> str:
    return getattr(handle.status, "value", str(handle.status))
