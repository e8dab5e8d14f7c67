"""The main screen: workflows, inbox, runs, the selected run's events, and the decision pane."""

from __future__ import annotations

from typing import Any, Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import Reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, OptionList

from engine.kernel.model import PendingEscalation
from engine.text_safety import visible
from tui.session import ConsoleSession
from tui.widgets.decision_pane import DecisionPane
from tui.widgets.event_log import EventLog
from tui.widgets.header import ConsoleHeader
from tui.widgets.inbox import Inbox
from tui.widgets.key_bar import KeyBar
from tui.widgets.row_table import RowTable
from tui.widgets.run_list import RunList
from tui.widgets.workflow_list import WorkflowList

# How long the keyboard waits before going back once the queue empties (s). A decision raised
# within it takes the keyboard without the list it would have gone back to being restyled and
# drawn twice (with 20 agents the queue empties at one answer in two: ~19 lines a key). Meanwhile
# the keyboard is nowhere; a key typed then sends it back first (`settle_keyboard`), so the key
# acts where it would have without the wait. Only the list's focused border shows this much later.
KEYBOARD_GRACE = 0.4


class MainScreen(Screen):
    AUTO_FOCUS = "#workflows"  # where a run starts; the inbox above it is empty at first
    # Textual repaints the whole screen when the focus moves; the widgets that gain or lose it
    # repaint themselves, and the pane takes and gives back the keyboard with every decision.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    def __init__(self, session: ConsoleSession) -> None:
        super().__init__()
        self.session = session
        self.current_id: str | None = None  # the escalation the pane shows
        self._position = 0  # its index in the queue, so a resolved one's successor takes its place
        self._focus_before: Widget | None = None  # where the keyboard was when a decision took it
        self._give_back: Timer | None = None  # the queue emptied: the keyboard goes back when it fires
        self.ready = False  # widgets composed: broker news before that waits for on_mount

    def compose(self) -> ComposeResult:
        clock = self.session.clock
        yield ConsoleHeader()
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield Inbox(clock, id="inbox")
                yield WorkflowList(id="workflows")
            with Vertical(id="right"):
                yield RunList(clock, id="runs")
                yield EventLog(id="events")
        yield DecisionPane(clock, on_answer=self.app.answer, id="pane")  # type: ignore[attr-defined]
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(WorkflowList).border_title = "Workflows"
        self.query_one(RunList).border_title = "Runs"
        self.query_one(EventLog).border_title = "Events"
        self.query_one(WorkflowList).show(self.session.workflows)
        self.ready = True
        self.sync_decisions()
        self.set_interval(1.0, self.refresh_clock)

    def on_resize(self) -> None:
        self.query_one(DecisionPane).fit()

    def on_unmount(self) -> None:
        self.ready = False  # runs may still report while the app shuts down

    def refresh_clock(self) -> None:
        """Redraw what moves with time: elapsed times, inbox ages, the countdown, the status."""
        self.query_one(ConsoleHeader).tick()
        self.query_one(RunList).tick()
        self.query_one(Inbox).refresh_ages()
        self.query_one(DecisionPane).refresh_countdown()
        self._follow_recorded()

    def _follow_recorded(self) -> None:
        """A run of another process shown in the Events panel: what it recorded since (its
        events reach the database from that process, not through this console's engine)."""
        log = self.query_one(EventLog)
        if log.run_id is not None and self.session.db is not None and self.session.run(log.run_id) is None:
            log.catch_up(recorded_events(self.session.db, log.run_id))

    # ---- workflows and runs ------------------------------------------------------------------

    def refresh_workflows(self) -> None:
        self.query_one(WorkflowList).show(self.session.workflows)

    @property
    def selected_workflow(self) -> int | None:
        return self.query_one(WorkflowList).highlighted

    @property
    def selected_run(self) -> Any:
        return self.session.run(self.query_one(RunList).selected_run_id)

    @property
    def decision_run(self) -> Any:
        """The run of the decision the pane shows (None when it shows none)."""
        pending = self.query_one(DecisionPane).pending
        return self.session.run(pending.escalation.run_id) if pending is not None else None

    def add_run(self, handle: Any) -> None:
        runs = self.query_one(RunList)
        runs.add_run(handle)
        runs.move_cursor(row=runs.get_row_index(handle.id))
        self._show_log(handle)

    def _show_log(self, handle: Any) -> None:
        """The Events panel on `handle`'s run: its log so far, and how it ended if it failed."""
        log = self.query_one(EventLog)
        log.show_run(handle.id, list(handle.events))
        if handle.finished_at is not None:
            self._note_ending(handle)

    def _note_ending(self, handle: Any) -> None:
        if handle.error and self.query_one(EventLog).run_id == handle.id:
            status = getattr(handle.status, "value", str(handle.status))
            line = Text(f"✗ {status}: ", style="bold red")
            line.append(visible(handle.error))  # the error and its fix, as written: never markup
            self.query_one(EventLog).note(line)

    def run_events(self, events: list[Any]) -> None:
        """A batch of run events: the selected run's log gets each, the run list each run's last."""
        log = self.query_one(EventLog)
        latest: dict[str, Any] = {event.run_id: event for event in events}
        shown = self.session.run(log.run_id) if log.run_id in latest else None
        if shown is not None:
            log.catch_up(list(shown.events))
        runs = self.query_one(RunList)
        for run_id, event in latest.items():
            runs.note_event(run_id, event.type, event.fields)

    def run_changed(self, handle: Any) -> None:
        """A run ended: its row, and its log's last events if the Events panel shows that run
        (another run's events there would read as the shown run's)."""
        self.query_one(RunList).refresh_run(handle.id)
        log = self.query_one(EventLog)
        if handle.finished_at is not None and log.run_id == handle.id:
            log.catch_up(list(handle.events))
            self._note_ending(handle)

    @on(RowTable.Highlighted, "#runs")
    def _run_highlighted(self, event: RowTable.Highlighted) -> None:
        run_id = event.key
        handle = self.session.run(run_id)
        if handle is not None and self.query_one(EventLog).run_id != run_id:
            self._show_log(handle)

    @on(OptionList.OptionSelected, "#workflows")
    def _workflow_chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.app.start_workflow(event.option_index)  # type: ignore[attr-defined]

    # ---- the decision queue ------------------------------------------------------------------

    def sync_decisions(self, raised: Sequence[str] = ()) -> None:
        """Bring the pane and the inbox in line with the broker's pending escalations (`raised`:
        the ids raised since the last sync).

        The pane keeps showing the escalation it shows while that one is pending: a new arrival
        never swaps the question under the user's fingers. A pane set aside comes back with the
        newest decision raised (it rang: a countdown is never running out of sight).
        """
        if not self.ready:
            return
        pending = self.session.pending()
        ids = [p.escalation.id for p in pending]
        listed = set(ids)  # membership in sets: 10,000 raised at once were 10,000 scans of the list each
        pane = self.query_one(DecisionPane)
        was_hidden = self.current_id is None or pane.aside
        shown_before = self.current_id
        arrived = [i for i in raised if i in listed]
        if pane.aside and arrived:
            pane.aside = False
            self.current_id = arrived[-1]
        if self.current_id not in listed:
            self.current_id = ids[min(self._position, len(ids) - 1)] if ids else None
        self._show(pending, ids)
        runs = self.query_one(RunList)
        arrived_set = set(arrived)
        for waiting in pending:
            if waiting.escalation.id in arrived_set:
                runs.note_status(waiting.escalation.run_id)
        if self.current_id is None:
            if pane.has_focus_within and self._give_back is None:  # no wait when the user had moved it away
                # Nowhere while it waits, at once: Textual blurs a widget it hides when its Hide
                # arrives, a frame later, which may be after the next decision took the keyboard.
                self.set_focus(None)
                self._give_back = self.set_timer(KEYBOARD_GRACE, self._give_back_due)
            return
        if pane.aside or (not was_hidden and self.current_id == shown_before):
            return
        held = self._give_back is not None and self.focused is None  # within the grace, and no click took it
        self._cancel_give_back()
        if was_hidden and not held:
            self._focus_before = self.focused
        elif not held and not pane.has_focus_within:
            return  # the user moved the keyboard away from the pane: it stays where they put it
        if held or not isinstance(self.focused, Input):  # unasked: the decision takes the keyboard, unless you type
            # At once, in the frame that shows the pane: keys typed ahead (already queued) reach
            # its answer field or its choices, never the widget that had the keyboard before.
            pane.focus_answer()

    def park_keyboard(self) -> None:
        """After a decision the user was typing into ended without them: the runs list, where
        a stray Enter or letter starts nothing (the workflow list would open a start dialog)."""
        self._focus_before = self.query_one(RunList)

    def settle_keyboard(self) -> None:
        """A key or a paste arrived: if the keyboard is waiting to go back (the queue emptied
        less than KEYBOARD_GRACE ago), it goes back now, before the key is dispatched, so the
        key never lands on the choices of a decision that is gone, nor on nothing."""
        if self._give_back is not None:
            self._cancel_give_back()
            self._give_back_due()

    def _cancel_give_back(self) -> None:
        if self._give_back is not None:
            self._give_back.stop()
            self._give_back = None

    def _give_back_due(self) -> None:
        self._give_back = None
        if self.query_one(DecisionPane).pending is None and self.focused is None:  # else a click took it meanwhile
            self._give_focus_back()

    def _give_focus_back(self) -> None:
        """The queue is empty: the keyboard returns where it was before the decision took it
        (else to the workflows), so the user's next keys do what they expect."""
        pane = self.query_one(DecisionPane)
        before = self._focus_before
        self._focus_before = None
        # At once (Widget.focus waits its turn): a key that sent the keyboard back is dispatched
        # right after, from where it now is.
        if before is not None and before.is_attached and before.focusable and pane not in before.ancestors_with_self:
            self.set_focus(before)
        else:
            self.set_focus(self.query_one(WorkflowList))

    def _show(self, pending: list[PendingEscalation], ids: list[str]) -> None:
        pane = self.query_one(DecisionPane)
        if self.current_id is None:
            pane.aside = False  # set aside was for those decisions: the next one comes up by itself
            pane.show(None)
            self._position = 0
        else:
            self._position = ids.index(self.current_id)
            shown = pending[self._position]
            pane.show(shown, self._position + 1, len(ids))
            if not pane.aside:
                self._follow_run(shown.escalation.run_id)
        self.query_one(Inbox).show(pending, self.current_id)
        self.query_one(ConsoleHeader).tick()  # its status depends on the pane being set aside

    def _follow_run(self, run_id: str) -> None:
        """The Events panel shows the run of the decision on screen (and the run list's cursor
        is on it), so the question comes with what led to it."""
        handle = self.session.run(run_id)
        if self.query_one(EventLog).run_id == run_id:
            return
        if handle is None:  # a run of another process (a worker, `escalate run --wait`): its events as recorded
            if self.session.db is not None:
                self.query_one(EventLog).show_run(run_id, recorded_events(self.session.db, run_id))
            return
        runs = self.query_one(RunList)
        if run_id in runs:
            runs.move_cursor(row=runs.get_row_index(run_id))  # its Highlighted message shows the log too
        self._show_log(handle)

    def set_aside(self) -> None:
        """Escape on the choices: the pane steps aside (the decision still waits, in the inbox
        and the header); `d`, the inbox or the next decision raised brings it back."""
        pane = self.query_one(DecisionPane)
        if pane.pending is None:
            return
        pane.aside = True
        pane.visible = False
        self.query_one(ConsoleHeader).tick()  # set aside: the header says when the first default falls
        self._give_focus_back()

    def bring_back(self) -> None:
        pane = self.query_one(DecisionPane)
        if pane.aside:
            pane.aside = False
            pane.visible = pane.pending is not None
            self.query_one(ConsoleHeader).tick()
            if pane.pending is not None:
                self._follow_run(pane.pending.escalation.run_id)

    def move_decision(self, delta: int) -> None:
        pending = self.session.pending()
        ids = [p.escalation.id for p in pending]
        if not ids:
            return
        index = ids.index(self.current_id) if self.current_id in ids else 0
        self.current_id = ids[(index + delta) % len(ids)]
        self.bring_back()
        self._show(pending, ids)
        self.query_one(DecisionPane).focus_answer()

    def select_decision(self, escalation_id: str) -> None:
        pending = self.session.pending()
        ids = [p.escalation.id for p in pending]
        if escalation_id in ids:
            self.current_id = escalation_id
            self.bring_back()
            self._show(pending, ids)
            self.query_one(DecisionPane).focus_answer()

    def focus_decision(self) -> None:
        if self.current_id is not None:
            if self.query_one(DecisionPane).aside:
                self._focus_before = self.focused
            self.bring_back()
            self.query_one(DecisionPane).focus_answer()

    @on(RowTable.Selected, "#inbox")
    def _inbox_chosen(self, event: RowTable.Selected) -> None:
        event.stop()
        self.select_decision(event.key)


def recorded_events(db: Any, run_id: str) -> list[Any]:
    """A run's events as the database holds them (every process writes its runs' events there)."""
    from engine.runtime.events import RunEvent  # ~20 ms of imports: not before the first frame

    try:
        rows = db.events_of(run_id)
    except Exception as exc:  # a database gone or not readable: said in the log, not a traceback
        return [RunEvent(run_id, "log", "", {"message": f"the run's events could not be read: {exc}"})]
    return [RunEvent(run_id, str(row.pop("type", "")), str(row.pop("time", "")), row) for row in rows if isinstance(row, dict)]
