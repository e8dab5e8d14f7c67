"""The decision pane on a real broker: it appears unasked, every choice type reaches the asker,
the countdown applies the default on the injected clock, and answers go to the shown escalation."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList, Static

from engine.kernel.model import OnTimeout, Option, Origin, Reason, ResolvedBy, ResponseType
from tests.tui.helpers import SIZE, ask, decided, make_app, make_session, pending, settle
from tui.widgets.decision_pane import DecisionPane


def pane_text(app) -> str:
    pane = app.main.query_one(DecisionPane)
    parts = [str(w.render()) for w in pane.query(Static) if w.display]
    options = pane.query_one("#pane-choices", OptionList)
    parts += [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    return "\n".join(parts)


async def test_pane_appears_unasked_with_seed_layout() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.main.query_one(DecisionPane)
        assert not pane.visible
        task = ask(session, pending(session.clock, task="journalowl-api-fix", timeout=None))
        await settle(pilot)
        assert pane.visible
        text = pane_text(app)
        assert "DECISION REQUIRED [journalowl-api-fix]" in text
        assert "Reason: architecture_decision" in text
        assert "Should I refactor the auth module" in text
        lines = [line for line in text.splitlines() if line.startswith("[")]
        assert lines[:5] == [
            "[1] Yes, use JWT (recommended)", "[2] No, keep sessions", "[3] Let agent decide",
            "[4] Skip this task", "[5] Custom response...",
        ]
        assert "Additional instructions" in text
        assert "No timeout: waits for your answer" in text
        # the keyboard is the pane's now: one key answers
        assert app.focused is pane.query_one("#pane-choices")
        await pilot.press("1")
        decision = await decided(task)
        assert decision.response.selected_option == "opt1"
        assert decision.resolved_by is ResolvedBy.HUMAN
        await settle(pilot)
        assert not pane.visible


async def test_let_agent_decide_only_when_allowed() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock, allow_agent_decision=False))
        await settle(pilot)
        text = pane_text(app)
        assert "Let agent decide" not in text
        assert "[3] Skip this task" in text
        await pilot.press("3")
        assert (await decided(task)).response.response_type is ResponseType.SKIP


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["2"], (ResponseType.OPTION, "opt2", None)),
        (["enter"], (ResponseType.OPTION, "opt1", None)),  # Enter takes the recommended
        (["down", "enter"], (ResponseType.OPTION, "opt2", None)),
        (["3"], (ResponseType.AGENT_DECIDE, None, None)),
        (["4"], (ResponseType.SKIP, None, None)),
        (["5", *"ok", "enter"], (ResponseType.TEXT, None, "ok")),
    ],
)
async def test_each_choice_type_reaches_the_asker(keys: list[str], expected: tuple) -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock))
        await settle(pilot)
        await pilot.press(*keys)
        response = (await decided(task)).response
        assert (response.response_type, response.selected_option, response.text_response) == expected


async def test_instructions_travel_with_the_choice_and_digits_type_there() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock))
        await settle(pilot)
        await pilot.press("i", *"v 1")
        instructions = app.main.query_one("#pane-instructions", Input)
        assert instructions.value == "v 1"  # "1" typed, not chosen
        assert not task.done()
        await pilot.press("escape", "2")
        response = (await decided(task)).response
        assert response.selected_option == "opt2"
        assert response.additional_instructions == "v 1"


async def test_custom_response_with_instructions() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock))
        await settle(pilot)
        await pilot.press("i", *"flag", "enter")  # Enter leaves the field
        await pilot.press("5", *"JWT", "enter")
        response = (await decided(task)).response
        assert response.response_type is ResponseType.TEXT
        assert response.text_response == "JWT"
        assert response.additional_instructions == "flag"


async def test_escape_leaves_custom_field_without_answering() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock))
        await settle(pilot)
        await pilot.press("5", *"half", "escape")
        assert not task.done()
        assert not app.main.query_one("#pane-custom", Input).display
        await pilot.press("1")
        assert (await decided(task)).response.selected_option == "opt1"


async def test_countdown_names_the_default_and_fires_on_the_fake_clock() -> None:
    session = make_session()
    clock = session.clock
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(clock, allow_agent_decision=False, timeout=300, on_timeout=OnTimeout.STOP,
                                    reason=Reason.TEST_FAILURE))
        await settle(pilot)
        countdown = app.main.query_one("#pane-countdown", Static)
        assert str(countdown.render()) == "No answer in 5:00 → the task stops"
        clock.advance(61)
        await pilot.pause(0.3)  # the pane redraws its countdown from the clock
        assert str(countdown.render()) == "No answer in 3:59 → the task stops"
        assert not task.done()
        clock.advance(240)
        decision = await decided(task)
        assert decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT
        assert decision.stops_task
        await settle(pilot)
        assert not app.main.query_one(DecisionPane).visible
        # pressing a number now answers nothing (the pane is gone, nothing is pending)
        await pilot.press("1")
        assert session.pending() == []


async def test_agent_text_is_never_markup() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        ask(session, pending(session.clock, question="Deploy [bold]now[/bold] to [prod vs staging]?",
                             options=(Option("a", "[red]yes[/red]", recommended=True),)))
        await settle(pilot)
        text = pane_text(app)
        assert "Deploy [bold]now[/bold] to [prod vs staging]?" in text
        assert "[1] [red]yes[/red] (recommended)" in text


async def test_control_characters_in_agent_text_never_reach_the_terminal() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        ask(session, pending(session.clock, task="t\x1b]2;pwned\x07", question="rm \x1b[31mred\x1b[0m\x9b2J",
                             context="a\rb\x08", options=(Option("a", "\x1b[5myes", recommended=True),)))
        await settle(pilot)
        frame = "".join(segment.text for strip in app.screen._compositor.render_strips() for segment in strip)
        assert "\x1b" not in frame and "\x9b" not in frame and "\x07" not in frame and "\r" not in frame
        assert "rm ␛[31mred␛[0m" in pane_text(app) and "[1] ␛[5myes (recommended)" in pane_text(app)


async def test_attention_bell_and_title() -> None:
    session = make_session()
    app = make_app(session)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        assert app.title == "escalate"
        ask(session, pending(session.clock))
        await settle(pilot)
        assert len(bells) == 1
        ask(session, pending(session.clock, run_id="r2"))
        ask(session, pending(session.clock, run_id="r3"))
        await settle(pilot)
        assert len(bells) == 3  # one bell per decision
        assert app.title == "escalate · 3 decisions waiting"
        await pilot.press("1")
        await settle(pilot)
        assert app.title == "escalate · 2 decisions waiting"
        await pilot.press("1")
        await settle(pilot)
        assert app.title == "escalate · 1 decision waiting"


async def test_pane_widgets_come_after_the_first_frame_and_an_early_decision_still_takes_the_keyboard() -> None:
    session = make_session()
    app = make_app(session)
    children_at_first_frame: list[int] = []
    original = app._display

    def display(screen, renderable) -> None:
        if renderable is not None and screen is app.main and not children_at_first_frame:
            children_at_first_frame.append(len(app.main.query_one(DecisionPane).children))
        original(screen, renderable)

    app._display = display  # type: ignore[method-assign]
    task = ask(session, pending(session.clock, timeout=None))  # raised before the pane has widgets
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert children_at_first_frame == [0]
        pane = app.main.query_one(DecisionPane)
        assert pane.visible and "Should I refactor the auth module" in pane_text(app)
        assert app.focused is pane.query_one("#pane-choices", OptionList)
        await pilot.press("2")
        assert (await decided(task)).response.selected_option == "opt2"


async def test_quitting_at_the_first_frame_before_the_pane_has_widgets_is_clean() -> None:
    app = make_app(make_session())
    original = app._display

    def display(screen, renderable) -> None:
        original(screen, renderable)
        if renderable is not None and screen is app.main:
            app.exit(0)  # a `q` as fast as a key can come

    app._display = display  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    assert app.return_value == 0 and app._exception is None


def screen_lines(app) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("size", [(80, 24), (60, 20), (100, 30)])
async def test_every_part_of_the_pane_stays_on_small_terminals(size: tuple[int, int]) -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=size) as pilot:
        ask(session, pending(session.clock, task="auth-refactor", timeout=90, on_timeout=OnTimeout.AGENT_DECIDE,
                             context="Touches src/api/auth.ts, src/api/session.ts and 5 tests in tests/api"))
        await settle(pilot)
        text = "\n".join(screen_lines(app))
        for part in ("DECISION REQUIRED [auth-refactor]", "Reason:", "[1] Yes, use JWT (recommended)", "Additional instructions",
                     "No answer in 1:30"):
            assert part in text, (part, text)
        await pilot.press("down", "down", "down", "down")  # to the last line, Custom response...
        await settle(pilot)
        assert "[5] Custom response..." in "\n".join(screen_lines(app))
        assert "No answer in" in "\n".join(screen_lines(app))


async def test_lines_past_nine_show_no_number_they_are_chosen_with_the_arrows() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        options = tuple(Option(f"o{i}", f"choice {i}", recommended=i == 1) for i in range(1, 10))
        task = ask(session, pending(session.clock, options=options))
        await settle(pilot)
        text = pane_text(app)
        assert "[9] choice 9" in text and "[10]" not in text and "    Skip this task" in text
        await pilot.press("end", "up", "enter")  # Skip this task, the line before the last
        assert (await decided(task)).response.response_type is ResponseType.SKIP


async def test_a_tool_approval_starts_on_deny_so_enter_fails_closed() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock, origin=Origin.TOOL_APPROVAL, allow_agent_decision=False,
                                    options=(Option("approve", "Approve: run write_file"), Option("deny", "Deny"))))
        await settle(pilot)
        await pilot.press("enter")
        assert (await decided(task)).response.selected_option == "deny"


def burst(app, *keys: str) -> None:
    """Keys as a fast typist's arrive: all queued before any of them is handled."""
    from textual import events

    names = {" ": "space", "[": "left_square_bracket", "]": "right_square_bracket", "/": "slash"}
    for key in keys:
        app.post_message(events.Key(names.get(key, key), None if key in ("enter", "escape") else key))


@pytest.mark.parametrize(("keys", "expected"), [
    (["i", *"keep cookie 123", "enter", "1"], ("opt1", None, "keep cookie 123")),
    (["5", *"custom answer, see [2]", "enter"], (None, "custom answer, see [2]", None)),
])
async def test_what_is_typed_right_after_i_or_custom_lands_in_the_field(keys, expected) -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock))
        await settle(pilot)
        burst(app, *keys)
        response = (await decided(task)).response
        assert (response.selected_option, response.text_response, response.additional_instructions) == expected
        assert app.screen is app.main  # no `s` or `h` slipped through


async def test_the_next_decision_draws_again_only_what_differs() -> None:
    """An agent's requests share their choices and title: answering one shows the next with its
    own text, and the choices stay the lines already on screen (not drawn again)."""
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        first = ask(session, pending(session.clock, question="Deploy build 1?", timeout=None))
        ask(session, pending(session.clock, question="Deploy build 2?", timeout=None))
        await settle(pilot)
        options = app.main.query_one("#pane-choices", OptionList)
        prompts = [options.get_option_at_index(i).prompt for i in range(options.option_count)]
        await pilot.press("down", "1")
        assert (await decided(first)).response.selected_option == "opt1"
        await settle(pilot)
        text = pane_text(app)
        assert "Deploy build 2?" in text and "Deploy build 1?" not in text and "1 of 1" not in text
        assert [options.get_option_at_index(i).prompt for i in range(options.option_count)] == prompts
        assert all(options.get_option_at_index(i).prompt is prompt for i, prompt in enumerate(prompts))
        assert options.highlighted == 0  # on the recommended option again
