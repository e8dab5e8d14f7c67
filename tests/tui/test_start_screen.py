"""The start screen tells a newcomer what each workflow does and what to type (issue 27, item
12): each demo has a one-line description and a sample input, read from the workflow's opening
comment (engine/lang/header.py); the list shows the description, the start dialog shows it and
pre-fills the input with the sample, selected, so that Enter starts with it and typing replaces it."""

from __future__ import annotations

from pathlib import Path

from textual import events

from engine.demo import demo_workflows
from engine.lang.header import HEAD_BYTES, About, about, read_about
from tests.tui.helpers import demo_console, settle, wait_until
from tui.screens.start_run import StartRunScreen
from tui.widgets.workflow_list import WorkflowList


def test_every_demo_says_what_it_does_and_what_to_type() -> None:
    described = {path.stem: read_about(path) for path in demo_workflows()}
    assert len(described) == 5
    for name, told in described.items():
        assert 10 <= len(told.description) <= 60, (name, told)  # one line in the list
        assert told.sample_input, name
    never_ask = {name for name, told in described.items() if told.description.startswith("Never asks")}
    assert never_ask == {"resolver", "code-search"}  # a newcomer does not wait for a question


def test_the_opening_comment_is_read_and_nothing_after_it() -> None:
    assert about("streetrace v1\n\n# Description:  Asks   twice\n# SAMPLE INPUT: ship it\n#\n# More.\n") == \
        About("Asks twice", "ship it")
    # Without the key, the first paragraph stands for the description.
    assert about("# Polishes a text\n# in turns.\n#\n# Details.\nflow main:\n    return 1\n") == About("Polishes a text in turns.")
    assert about("flow main:\n    # description: not the opening comment\n    return 1\n") == About()
    assert about("streetrace v1\nmodel m = a/b\n# sample input: too late\n") == About()


def test_a_huge_or_unreadable_file_costs_a_bounded_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.sr"
    huge.write_text("#" + "x" * (50 * HEAD_BYTES) + "\n# sample input: never read\n")
    assert read_about(huge).sample_input == "" and len(read_about(huge).description) < HEAD_BYTES
    assert read_about(tmp_path / "missing.sr") == About()


async def test_the_list_and_the_dialog_show_the_description_and_enter_starts_with_the_sample(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        listed = app.main.query_one(WorkflowList)
        await wait_until(pilot, lambda: "JWT or sessions" in str(listed.get_option_at_index(0).prompt), 60, "the description")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), 60, "the start dialog")
        await settle(pilot)
        assert "JWT or sessions" in str(app.screen.query_one("#start-about").render())
        field = app.screen.query_one("#start-input")
        assert field.value == "Fix login" and field.selected_text == "Fix login"
        await pilot.press("enter")
        await wait_until(pilot, lambda: session.runs, 60, "the run")
        assert session.runs[0].input == "Fix login"


async def test_typed_ahead_input_replaces_the_sample(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        for key in ["s", *"hi", "enter"]:  # one burst, queued before the dialog is mounted
            app.post_message(events.Key(key, None if key == "enter" else key))
        await settle(pilot)
        await wait_until(pilot, lambda: session.runs, 60, "the run")
        assert session.runs[0].input == "hi"
        await wait_until(pilot, lambda: session.pending(), 60, "its question")
        await pilot.press("s")  # on the next dialog, typed after it has the focus
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), 60, "the start dialog")
        await settle(pilot)
        await pilot.press(*"ok", "enter")
        await wait_until(pilot, lambda: len(session.runs) == 2, 60, "the second run")
        assert session.runs[1].input == "ok"
