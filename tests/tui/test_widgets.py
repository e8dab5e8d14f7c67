"""The key bar, the event log and the header: what they show, and that they draw without laying out the screen."""

from __future__ import annotations

from types import SimpleNamespace

from rich.text import Text
from textual.command import CommandPalette
from textual.screen import Screen

from tests.tui.helpers import SIZE, ask, decided, make_app, make_session, pending, settle
from tui.widgets.event_log import MAX_EVENTS, EventLog
from tui.widgets.header import ConsoleHeader
from tui.widgets.inbox import Inbox
from tui.widgets.key_bar import KeyBar


def shown(bar: KeyBar) -> list[str]:
    return [f"{item.display} {item.description}" for item in bar.items]


def count_layouts(app) -> list[int]:
    """A list that grows by one at each layout of the main screen."""
    layouts: list[int] = []
    original = Screen._refresh_layout
    app.main._refresh_layout = lambda *a, **k: (layouts.append(1), original(app.main, *a, **k))[1]  # type: ignore[method-assign]
    return layouts


def _log_events(count: int, message: str = "line {n}") -> list[SimpleNamespace]:
    return [SimpleNamespace(time=f"2026-11-22T10:00:{n % 60:02d}Z", type="log", fields={"message": message.format(n=n)})
            for n in range(count)]


def _visible(log: EventLog) -> str:
    return "\n".join("".join(segment.text for segment in log.render_line(y)) for y in range(log.size.height))


async def test_key_bar_shows_the_focused_widgets_keys_and_clicks_press_them() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.main.query_one(KeyBar)
        assert shown(bar)[:3] == ["s Start run", "c Cancel run", "d Decision"]
        assert bar.palette is not None and bar.palette.description == "palette"
        line = str(bar.render())
        assert line.startswith(" s Start run  c Cancel run ")
        assert line.rstrip().endswith("▏^p palette")
        task = ask(session, pending(session.clock))
        await settle(pilot)
        assert shown(bar)[0] == "i Instructions"  # the pane has the keyboard: its keys come first
        assert "i Instructions" in str(bar.render())
        await pilot.click(KeyBar, offset=(2, 0))  # on " i Instructions "
        assert app.focused is app.main.query_one("#pane-instructions")
        await pilot.press("escape", "1")
        assert (await decided(task)).response.selected_option == "opt1"
        await settle(pilot)
        assert shown(bar)[0] == "s Start run"


async def test_key_bar_shows_every_key_on_a_narrow_terminal() -> None:
    app = make_app(make_session())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = str(app.main.query_one(KeyBar).render())
        keys = [item.display for item in app.main.query_one(KeyBar).items]
        assert len(line) <= 80 and "…" not in line and "? Help" in line and "q Quit" in line
        # Every key but the rules screen's keeps its place and label at 80 columns; `r` is the
        # rightmost before Help, so it steps aside first (the help lists it).
        assert [key for key in keys if f" {key} " not in line] == ["r"]


async def test_key_bar_repaints_only_when_its_keys_change() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.main.query_one(KeyBar)
        repaints = []
        original = bar.refresh
        bar.refresh = lambda *a, **k: (repaints.append(1), original(*a, **k))[1]  # type: ignore[method-assign]
        app.main.refresh_bindings()
        await settle(pilot)
        assert repaints == []  # same keys: nothing to draw
        app.main.query_one("#runs").focus()
        ask(session, pending(session.clock))
        await settle(pilot)
        assert repaints  # the pane took the keyboard: new keys


async def test_event_log_grows_and_follows_its_end_without_laying_out_the_screen() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        await settle(pilot)
        layouts = count_layouts(app)
        events = _log_events(100)
        log.show_run("r1", events[:2])
        await settle(pilot)
        layouts.clear()
        log.catch_up(events[:3])  # the log is not full yet: no scrollbar, no layout
        await settle(pilot)
        assert layouts == []
        log.catch_up(events)
        await settle(pilot)
        assert log.virtual_size.height == 100
        assert log.show_vertical_scrollbar  # appearing, the scrollbar lays out once
        assert log.scroll_y == log.max_scroll_y > 0  # it follows the newest line
        assert "line 99" in "".join(segment.text for segment in log.render_line(log.size.height - 1))
        layouts.clear()
        log.catch_up(events + events[:5])
        await settle(pilot)
        assert log.virtual_size.height == 105 and log.scroll_y == log.max_scroll_y
        assert layouts == []  # more lines: a repaint and a scrollbar update, no layout


async def test_event_log_scrolled_up_stays_where_the_user_left_it() -> None:
    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        events = _log_events(100)
        log.show_run("r1", events[:60])
        await settle(pilot)
        assert log.scroll_y == log.max_scroll_y > 0
        log.scroll_to(y=0, animate=False, immediate=True)
        log.catch_up(events)
        await settle(pilot)
        assert log.scroll_y == 0 and "line 0" in _visible(log)  # reading the top: not pulled down
        log.scroll_end(animate=False, immediate=True)
        log.catch_up(events + events[:3])
        await settle(pilot)
        assert log.scroll_y == log.max_scroll_y  # back at the end: follows again


async def test_event_log_wraps_long_agent_text_again_when_its_width_changes() -> None:
    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        log.show_run("r1", _log_events(1, "word " * 12 + "[bold]end[/bold]"))
        await settle(pilot)
        wide = len(log.lines)
        assert all(line.cell_length <= log.scrollable_content_region.width for line in log.lines)
        assert "[bold]end[/bold]" in "".join(line.text for line in log.lines)  # text, never markup
        await pilot.resize_terminal(60, 40)
        await settle(pilot)
        assert len(log.lines) > wide  # narrower: the same event on more lines
        assert all(line.cell_length <= log.scrollable_content_region.width for line in log.lines)
        assert log.virtual_size.height == len(log.lines)


async def test_event_log_keeps_the_newest_events_only() -> None:
    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        events = _log_events(MAX_EVENTS + 50)
        log.show_run("r1", events[:10])
        log.catch_up(events)
        await settle(pilot)
        text = "\n".join(line.text for line in log.lines)
        assert len(log.lines) == MAX_EVENTS and "line 49\n" not in text and text.startswith("10:00:50 ")
        assert text.rstrip().endswith(f"line {MAX_EVENTS + 49}")


async def test_event_log_shown_again_keeps_a_runs_lines_and_writes_only_its_new_events() -> None:
    """With many agents asking, the pane moves the log to another run at every answer: a run
    shown lately is not formatted and wrapped again, only what it logged since is written."""
    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        ours, other = _log_events(30, "ours {n}"), _log_events(5, "other {n}")
        log.show_run("r1", ours[:25])
        await settle(pilot)
        first = log.lines[0]
        log.show_run("r2", other)
        log.show_run("r1", ours)  # five more events since it was shown
        await settle(pilot)
        lines = [line.text.rstrip() for line in log.lines]
        assert log.lines[0] is first  # written once
        assert len(lines) == 30 and lines[0].endswith("ours 0") and lines[-1].endswith("ours 29")
        assert log.border_title == "Events · run r1" and log.scroll_y == log.max_scroll_y  # it follows its end
        log.show_run("r2", other)
        await pilot.resize_terminal(70, 40)
        await settle(pilot)
        log.show_run("r1", ours)  # kept at another width: wrapped again to this one
        await settle(pilot)
        assert all(line.cell_length <= log.scrollable_content_region.width for line in log.lines)
        assert [line.text for line in log.lines if "ours" in line.text][-1].rstrip().endswith("ours 29")


async def test_event_log_shown_again_writes_a_note_only_once() -> None:
    """A line that is not an event (how a run failed) is written by whoever shows the run: a run
    with one is not kept, so showing it again never doubles it."""
    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        log.show_run("r1", _log_events(3))
        log.note(Text("✗ failed: the agent crashed"))
        log.show_run("r2", _log_events(2))
        log.show_run("r1", _log_events(3))
        await settle(pilot)
        assert [line.text.rstrip()[-4:] for line in log.lines] == ["ne 0", "ne 1", "ne 2"]


async def test_header_shows_the_title_without_laying_out_and_its_icon_opens_the_palette() -> None:
    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        header = app.main.query_one(ConsoleHeader)
        await settle(pilot)
        layouts = count_layouts(app)
        ask(app.session, pending(app.session.clock, timeout=None))
        await settle(pilot)
        line = "".join(segment.text for segment in header.render_line(0))
        assert line.index("escalate · 1 decision waiting") > 8  # after the icon, centred
        layouts.clear()
        ask(app.session, pending(app.session.clock, run_id="r2", timeout=None))
        await settle(pilot)
        assert "escalate · 2 decisions waiting" in "".join(segment.text for segment in header.render_line(0))
        assert layouts == []  # a new title: one line repainted
        await pilot.click(ConsoleHeader, offset=(1, 0))
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)


async def test_a_decision_raised_draws_its_runs_waiting_status_with_the_pane() -> None:
    """The run's "waiting" is drawn in the frame that shows the pane (one frame for the decision),
    not in a frame of its own when the run's next event comes (old: it stayed "running" until then)."""
    from tui.widgets.run_list import RunList

    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        clock = session.clock
        run = SimpleNamespace(id="r7", status="running", workflow="acp", flow="", tokens=0,
                              started_at=clock.now(), finished_at=None, events=[])
        runs = app.main.query_one(RunList)
        runs.add_run(run)
        await settle(pilot)
        assert "running" in runs.render_line(1).text
        run.status = "waiting"  # as the engine sets it just before the broker raises (engine/runtime/human.py)
        task = ask(session, pending(clock, run_id="r7"))
        await settle(pilot)
        assert app.main.query_one("#pane").visible
        assert "waiting" in runs.render_line(1).text  # no run event came: the decision drew it
        task.cancel()


async def test_the_pane_coming_and_going_lays_out_the_screen_but_redraws_no_scrollbar() -> None:
    """Each layout of the screen (the pane appears, is set aside, comes back: with many agents
    one key in two) used to redraw every scrolling list's scrollbar (Textual's ScrollView);
    nothing they show changed (tui/widgets/steady_scrollbars.py)."""
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        inbox = app.main.query_one(Inbox)
        log.show_run("r1", _log_events(100))
        tasks = [ask(session, pending(session.clock, run_id=f"r{n}")) for n in range(30)]
        await settle(pilot)
        assert log.show_vertical_scrollbar and inbox.show_vertical_scrollbar  # both lists overflow
        drawn: list[str] = []
        for name, bar in (("log", log.vertical_scrollbar), ("inbox", inbox.vertical_scrollbar)):
            bar.render = (lambda render, name: lambda: (drawn.append(name), render())[1])(bar.render, name)  # type: ignore[method-assign]
        layouts = count_layouts(app)
        await pilot.press("escape")  # the pane steps aside
        await settle(pilot)
        await pilot.press("d")  # and comes back
        await settle(pilot)
        assert len(layouts) >= 2 and drawn == []
        log.catch_up(_log_events(101))  # what a scrollbar shows changed: it is drawn again
        await settle(pilot)
        assert drawn == ["log"]
        await pilot.press("escape", "d")  # and not again by the layouts after (it shows that already)
        await settle(pilot)
        assert drawn == ["log"]
        await pilot.press("1")
        assert (await decided(tasks[0])).response.selected_option == "opt1"
