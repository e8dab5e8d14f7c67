"""The decision pane of seed 004: one pending escalation, answered with one key.

Agent text (question, context, labels) is shown as plain `Text`, never markup. Number keys are
bound here, on the pane, not on the app: while the instructions field has focus, `1` types "1".
The pane never talks to the broker itself; it calls `on_answer` with the exact escalation id it
showed (a direct call: a message would wait behind the queue, and latency matters here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Size
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from engine.kernel.clock import Clock
from engine.kernel.model import ASKED_BY, Escalation, Origin, PendingEscalation, Response
from engine.kernel.responses import DENY, by_pane_key, kind, pane_extras
from engine.text_safety import visible
from tui.format import countdown, one_line, short_paths


@dataclass(frozen=True)
class Choice:
    """One numbered line of the pane: an option of the agent's, or one of the three extras."""

    key: str  # "opt:<id>" | "agent" | "skip" | "custom"
    label: str
    option_id: str | None = None
    recommended: bool = False


def choices_for(escalation: Escalation) -> list[Choice]:
    """The pane's numbered choices, in seed 004's order. A tool approval is approve or deny
    only: the tool runs on approve and nothing else, so skip or free text would be misleading."""
    choices = [Choice(f"opt:{o.id}", o.label, o.id, o.recommended) for o in escalation.options]
    return choices + [Choice(k.pane_key or "", k.label) for k in pane_extras(escalation)]


def _asks_for_text(escalation: Escalation) -> bool:
    """A question without options (a flow's `escalate to human "..."`): answered by typing."""
    return not escalation.options and escalation.origin is not Origin.TOOL_APPROVAL


def pane_text(escalation: Escalation, asked_by: str = "") -> Text:
    """Reason, why a person is asked (the rule or the override's switch), question and
    context, as plain text (agent text is never markup)."""
    text = Text("Reason: ", style="bold")
    text.append(escalation.reason.value)
    text.append(f"    agent {one_line(escalation.agent, 60)} · run {escalation.run_id}\n", style="dim")
    if asked_by:
        text.append("Asked by: ", style="bold")
        text.append(f"{short_paths(asked_by)}\n")
    text.append(visible(escalation.question))
    if escalation.context:
        text.append("\n")
        text.append(visible(escalation.context), style="italic dim")
    return text


def _choice_prompt(number: int, choice: Choice, description: str) -> Text:
    # Keys 1-9 choose: a tenth line and beyond is chosen with the arrows and Enter, so it shows
    # no number that could not be typed.
    prompt = Text(f"[{number}] " if number <= 9 else "    ", style="bold")
    prompt.append(visible(choice.label))
    if choice.recommended:
        prompt.append(" (recommended)", style="bold green")
    if description:
        prompt.append(f"\n    {visible(description)}", style="dim")
    return prompt


def _update_in_place(static: Static, text: Text) -> None:
    """Show `text`; the screen is laid out again only if it takes another number of lines
    (answering one of many similar decisions then repaints the pane's lines, nothing more)."""
    height, width = static.content_size.height, static.content_size.width
    static.update(text, layout=False)
    if not width or static.get_content_height(Size(0, 0), Size(0, 0), width) != height:
        static.refresh(layout=True)


def _set_prompts(options: OptionList, prompts: list[Text]) -> bool:
    """The choices, replaced in place when there are as many (the option list then lays the
    screen out again only if its height changes: its virtual size is a layout reactive), and
    only those that differ. Whether any changed."""
    if options.option_count != len(prompts):
        options.clear_options()
        options.add_options(Option(prompt) for prompt in prompts)
        return True
    changed = [(index, prompt) for index, prompt in enumerate(prompts) if options.get_option_at_index(index).prompt != prompt]
    if not changed:  # the same choices (an agent's permission requests share their options): nothing to draw
        return False
    for index, prompt in changed:
        options.replace_option_prompt_at_index(index, prompt)
    options.scroll_to_highlight()  # measures the new prompts now, not during the next frame
    return True


# Rows of the pane besides its text and its choices (theme.tcss): its border (2), the title (1),
# the gap above the choices (1), the instructions' rule and label (2), field (1), countdown (1).
PANE_FIXED_ROWS = 8
MAX_BODY_ROWS = 10  # reason, question and context, with the rule above them
MAX_CHOICE_ROWS = 12


class DecisionPane(Vertical):
    """Shows one pending escalation; the app decides which one (queue position included)."""

    # Priority bindings: the app handles them as the key arrives, not after it has bubbled up
    # from the focused widget (one event-loop turn per hop, slow while many runs are busy).
    # They step aside (SkipAction) while a text field has focus, so `1` types "1" there.
    BINDINGS = [
        *[Binding(str(n), f"choose({n})", f"choice {n}", show=False, priority=True) for n in range(1, 10)],
        Binding("enter", "take_highlighted", "Choose", show=False, priority=True),
        # Priority too, and the field takes the keyboard at once (Widget.focus waits its turn):
        # what is typed right after `i` lands in the field, not on the choices.
        Binding("i", "focus_instructions", "Instructions", priority=True),
        # Escape: from a field back to the choices; on the choices, the pane steps aside (`d`).
        Binding("escape", "escape", "Hide", priority=True),
        # Beyond one answer (tui/decide_actions.py); they too step aside in text fields. In the
        # key bar when they apply to the decision on screen (EscalateApp.check_action).
        Binding("a", "app.teach('allow')", "Allow always", priority=True),
        Binding("n", "app.teach('deny')", "Deny always", priority=True),
        Binding("e", "app.edit_args", "Edit and approve", priority=True),
        Binding("b", "app.batch", "Batch", priority=True),
    ]

    def __init__(self, clock: Clock, *, on_answer: Callable[[str, Response], None], id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self._on_answer = on_answer  # called with the id of the escalation on screen
        self.pending: PendingEscalation | None = None
        self._choices: list[Choice] = []
        self._drafts: dict[str, str] = {}  # escalation id -> instructions typed so far
        self._mounted = False
        self._focus_asked = False  # the keyboard was asked for before the children were there
        self._queue = (0, 0)  # (position, total) of the shown escalation
        self._countdown = ""  # the countdown line on screen
        self.aside = False  # Escape set the pane aside: hidden until `d` (MainScreen.set_aside)
        # Its parts, held rather than looked up: `show` runs with every decision raised and
        # answered, on the way to the frame that shows it.
        self._title = Static("", id="pane-title", markup=False)
        self._position = Static("", id="pane-queue", markup=False)
        self._text = Static("", id="pane-text", markup=False)
        self._body = VerticalScroll(self._text, id="pane-body")
        self._options = OptionList(id="pane-choices", markup=False)
        self._custom = Input(placeholder="your answer, then Enter (Escape: back)", id="pane-custom", compact=True)
        self._custom.display = False  # until a choice asks for text
        self._instructions_field = Input(placeholder="> type here, Enter or Escape to go back", id="pane-instructions",
                                         compact=True)
        self._countdown_line = Static("", id="pane-countdown", markup=False)
        self._shown: tuple[Text | None, Text | None, Text | None] = (None, None, None)  # title, position, text on screen
        self._choices_drawn = 0  # counts the changes of the choices on screen
        self._fitted: tuple[int, int, int, int, bool] | None = None  # what `fit` sized the pane for

    def on_mount(self) -> None:
        # The pane's widgets are mounted right after the console's first frame, which they would
        # cost ~25 ms (its inputs and choices are a third of the screen's styling); no decision
        # can be pending before the runtime loads, after that frame too.
        self.call_after_refresh(self._mount_children)

    async def _mount_children(self) -> None:
        await self.mount_all([
            Horizontal(self._title, self._position, id="pane-head"),
            # One widget for reason, question and context: fewer widgets to lay out and paint
            # when the pane switches to another decision.
            self._body,
            self._options,
            self._custom,
            Static("Additional instructions (optional, i):", id="pane-instructions-label"),
            self._instructions_field,
            self._countdown_line,
        ])
        if not self.is_attached:  # the console quit before the pane got its widgets
            return
        # The countdown is redrawn from the injected clock: a frozen clock gives a frozen pane.
        self.set_interval(0.25, self.refresh_countdown)
        self._mounted = True
        if self.pending is not None:  # a decision arrived before the pane had its children
            pending, self.pending = self.pending, None
            self.show(pending, *self._queue)
            if self._focus_asked:
                self.focus_answer()

    # ---- what is shown -------------------------------------------------------------------

    def show(self, pending: PendingEscalation | None, position: int = 0, total: int = 0) -> None:
        """Display `pending` (the `position`-th of `total` queued), or nothing."""
        # Visibility, not display: the pane keeps its place in the layout, so the other widgets'
        # geometry stays the same and only the pane's region is drawn again (toggling display
        # changed every widget's layout order, and Textual redrew the whole screen).
        self.visible = pending is not None and not self.aside
        self._queue = (position, total)
        if not self._mounted:
            self.pending = pending
            return
        self._save_draft()
        previous = self.pending
        self.pending = pending
        if pending is None:
            self._choices = []
            return
        esc = pending.escalation
        where = Text(f"{position} of {total} · [ ]" if total > 1 else "", style="bold")
        if pending == previous:  # same escalation: keep the user's highlight and typing (a changed one is shown again)
            self._show_lines(where=where)
            return
        title = Text("⚠  DECISION REQUIRED ", style="bold")
        title.append(f"[{one_line(esc.task_id, 80)}]", style="bold yellow")
        self._show_lines(title, where, pane_text(esc, str(pending.extra.get(ASKED_BY) or "")))
        self._choices = choices_for(esc)
        descriptions = {o.id: o.description for o in esc.options}
        self._choices_drawn += _set_prompts(self._options, [
            _choice_prompt(n, c, descriptions.get(c.option_id or "", ""))
            for n, c in enumerate(self._choices, start=1)
        ])
        # Enter takes the recommended option; with none, a tool approval starts on deny (a tool
        # runs only when someone means it: fail closed, as its timeout is).
        fallback = next((i for i, c in enumerate(self._choices) if c.option_id == DENY), 0) if esc.origin is Origin.TOOL_APPROVAL else 0
        if _asks_for_text(esc):  # nothing to choose from: the answer is typed (a reflexive Enter never skips)
            fallback = next(i for i, c in enumerate(self._choices) if c.key == "custom")
        recommended = next((i for i, c in enumerate(self._choices) if c.recommended), fallback)
        self._options.highlighted = recommended  # Enter takes the recommended option
        self._custom.value = ""
        self._custom.display = _asks_for_text(esc)
        self._instructions_field.value = self._drafts.get(esc.id, "")
        self.refresh_countdown()
        self.fit()

    def _show_lines(self, title: Text | None = None, where: Text | None = None, text: Text | None = None) -> None:
        """The title, the queue position and the text, each drawn again only when it changed
        (many decisions of one agent differ in a line or two)."""
        shown = self._shown
        if title is not None and title != shown[0]:
            self._title.update(title, layout=False)
        if where is not None and where != shown[1]:
            self._position.update(where, layout=False)  # fixed size: no relayout
        if text is not None and text != shown[2]:
            _update_in_place(self._text, text)
        else:
            text = shown[2]  # the one on screen: the same object while the same text shows (`fit`)
        self._shown = (title if title is not None else shown[0], where if where is not None else shown[1], text)

    def fit(self) -> None:
        """Size the pane to the terminal so that every part of it stays on screen: on a small
        one it may cover the lists, and the text and the choices scroll inside it (the choices
        keep at least three lines; the highlight scrolls them)."""
        if not self._mounted or self.pending is None:
            return
        height = self.screen.size.height
        width = max(1, self.content_size.width)
        # Measuring the text and the choices was half of showing a decision: done again only
        # when one of them, the size or the answer field changed.
        fitted = (height, width, id(self._shown[2]), self._choices_drawn, self._custom.display)
        if fitted == self._fitted:
            return
        self._fitted = fitted
        # 70% of a tall screen; on a short one all but the header and key bar (and the gap).
        limit = max(int(height * 0.7), min(height - 3, 22))
        self.styles.max_height = limit
        body, options = self._body, self._options
        body_needs = 1 + self._text.get_content_height(Size(0, 0), Size(0, 0), width)
        choices_need = options.get_content_height(Size(0, 0), Size(0, 0), width)
        fixed = PANE_FIXED_ROWS + (1 if self._custom.display else 0)
        room = max(2, limit - fixed)
        choices = min(choices_need, MAX_CHOICE_ROWS, max(min(3, choices_need), room - min(body_needs, 4)))
        body.styles.max_height = max(2, min(MAX_BODY_ROWS, room - choices))
        options.styles.max_height = max(1, min(choices, room - 2))

    def refresh_countdown(self) -> None:
        if self.pending is None or not self._mounted:
            return
        line = countdown(self.pending, self._clock.now())
        if line != self._countdown:  # four checks a second; most change nothing on screen
            self._countdown = line
            self._countdown_line.update(Text(line, style="bold"), layout=False)

    def focus_answer(self) -> None:
        """Where the keyboard goes when a decision is shown: the answer field for a question
        without options (type, then Enter), else the choices."""
        if self._mounted and self.pending is not None and _asks_for_text(self.pending.escalation):
            self._custom.display = True
            self.screen.set_focus(self._custom)
            self.fit()
        else:
            self.focus_choices()

    def focus_choices(self) -> None:
        if self._mounted:  # at once, like the fields: the next key of a burst is a choice again
            self.screen.set_focus(self._options)
        else:
            self._focus_asked = True

    def forget(self, escalation_id: str) -> None:
        """A resolved escalation's draft instructions are dropped."""
        self._drafts.pop(escalation_id, None)

    def _save_draft(self) -> None:
        if self.pending is not None:
            self._drafts[self.pending.escalation.id] = self._instructions_field.value

    # ---- answering -------------------------------------------------------------------------

    def action_choose(self, number: int) -> None:
        self._skip_while_typing()
        if 1 <= number <= len(self._choices):
            self._take(self._choices[number - 1])

    def action_take_highlighted(self) -> None:
        """Enter: the highlighted line (the recommended option until the user moves). In the
        instructions field it goes back to the choices, at once (the next key of a burst is a
        choice again); in the custom-answer field it sends the answer."""
        if self.app.focused is self._instructions_field:
            self.focus_choices()
            return
        self._skip_while_typing()
        index = self._options.highlighted
        if index is None or index >= len(self._choices):
            raise SkipAction()
        self._take(self._choices[index])

    def _skip_while_typing(self) -> None:
        if isinstance(self.app.focused, Input):
            raise SkipAction()  # the key belongs to the text field

    def action_focus_instructions(self) -> None:
        self._skip_while_typing()
        self.screen.set_focus(self._instructions_field)

    def action_escape(self) -> None:
        """Escape: from a field back to the choices; on the choices, the pane steps aside until
        `d` (elsewhere Escape is not the pane's)."""
        custom = self._custom
        if self._instructions_field.has_focus or custom.has_focus:
            custom.display = self.pending is not None and _asks_for_text(self.pending.escalation)
            self.focus_choices()
        elif self._options.has_focus:
            set_aside = getattr(self.screen, "set_aside", None)
            if set_aside is None:
                raise SkipAction()
            set_aside()
        else:
            raise SkipAction()

    @on(OptionList.OptionSelected, "#pane-choices")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._take(self._choices[event.option_index])

    @on(Input.Submitted, "#pane-custom")
    def _custom_done(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self._answer(by_pane_key("custom").make(event.value.strip(), self._instructions()))

    def _take(self, choice: Choice) -> None:
        if choice.key == "custom":
            self._custom.display = True
            self.screen.set_focus(self._custom)  # at once: the answer typed right after the key lands here
            self.fit()
            return
        if self.pending is None:
            return
        # Instructions typed just before (a burst: `i`, text, Enter, `1`) may still wait in the
        # field's own message queue: the answer is made after them, in that queue, for the
        # escalation on screen now.
        self._instructions_field.call_later(self._send, self.pending.escalation.id, choice)

    def _send(self, escalation_id: str, choice: Choice) -> None:
        answer = kind("option") if choice.option_id is not None else by_pane_key(choice.key)
        self._on_answer(escalation_id, answer.make(choice.option_id, self._instructions()))

    def _instructions(self) -> str | None:
        return self._instructions_field.value.strip() or None

    def _answer(self, response: Response) -> None:
        if self.pending is not None:
            self._on_answer(self.pending.escalation.id, response)
