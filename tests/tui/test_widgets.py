"""The key bar and the event log: what they show, and that they draw without laying out the screen."""

from __future__ import annotations

from types import SimpleNamespace

from textual.screen import Screen

from tests.tui.helpers import SIZE, ask, decided, make_app, make_session, pending, settle
from tui.widgets.event_log import EventLog
from tui.widgets.key_bar import KeyBar


def shown(bar: KeyBar) -> list[str]:
    return [f"{item.display} {item.description}" for item in bar.items]


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
        layouts = []
        original = Screen._refresh_layout
        app.main._refresh_layout = lambda *a, **k: (layouts.append(1), original(app.main, *a, **k))[1]  # type: ignore[method-assign]
        events = [SimpleNamespace(time=f"2026-11-22T10:00:{n % 60:02d}Z", type="log", fields={"message": f"line {n}"})
                  for n in range(100)]
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
