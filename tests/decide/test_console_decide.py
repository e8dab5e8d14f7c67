"""Pilot tests of the console's decision flows on the real engine: teach a rule from a decision
(and it settles the other waiting request), edit before approving, batch, the rules screen,
and the history's audit (filters, figures, export)."""

from __future__ import annotations

import json

from engine.kernel.model import ResolvedBy
from rules import load_rules
from tests.decide.console_support import start, tool_console, waiting
from tests.tui.helpers import wait_until
from tui.screens.batch import BatchScreen
from tui.screens.edit_args import EditArgsScreen
from tui.screens.rules import RulesScreen
from tui.screens.teach_rule import TeachRuleScreen


async def test_always_allow_saves_a_rule_and_settles_the_waiting_ones(tmp_path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        runs = start(app, session, 2)
        await waiting(pilot, session, 2)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, TeachRuleScreen), 60, "the teach dialog")
        pattern = app.screen.query_one("#teach-pattern").value
        assert pattern.startswith("re:(?-i)^write_file path: RELEASED\\.txt")
        await pilot.press("enter")
        await wait_until(pilot, lambda: all(r.finished_at for r in runs), 60, "both runs")
        assert [r.result for r in runs] == ["written", "written"]
        decisions = [rec.decision for rec in session.records.values()]
        assert len(decisions) == 2 and all(d.resolved_by is ResolvedBy.RULE for d in decisions)
        text = (tmp_path / "rules.yaml").read_text()
        assert "# keep this comment" in text and "taught:" in text
        [rule] = load_rules(tmp_path / "rules.yaml").override("deploy").rules
        assert rule.action.value == "allow" and decisions[0].audit.rule == rule.describe()
        # Taught, it applies to the next run at once: no decision is raised.
        [third] = start(app, session, 1)
        await wait_until(pilot, lambda: third.finished_at is not None, 60, "the third run")
        assert third.result == "written" and not session.pending()


async def test_always_deny_with_an_edited_pattern(tmp_path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        [run] = start(app, session, 1)
        await waiting(pilot, session, 1)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, TeachRuleScreen), 60, "the teach dialog")
        field = app.screen.query_one("#teach-pattern")
        field.value = "re:nothing like it"
        await pilot.pause()
        assert "does not match this request" in str(app.screen.query_one("#teach-check").render())
        await pilot.press("enter")  # refused: the dialog stays
        assert isinstance(app.screen, TeachRuleScreen)
        field.value = "re:^write_file path: RELEASED"
        await pilot.press("enter")
        await wait_until(pilot, lambda: run.finished_at is not None, 60, "the run")
        assert run.result == "denied" and not (session.workspace / "RELEASED.txt").exists()
        [record] = session.records.values()
        assert record.decision.resolved_by is ResolvedBy.RULE and "re:^write_file path: RELEASED" in record.decision.audit.rule


async def test_edit_before_approving_runs_the_tool_with_the_edited_arguments(tmp_path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        [run] = start(app, session, 1)
        await waiting(pilot, session, 1)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditArgsScreen), 60, "the editor")
        editor = app.screen.query_one("#edit-args")
        editor.text = json.dumps({"path": "STAGED.txt", "content": "staging"})
        await pilot.pause()
        assert "edited" in str(app.screen.query_one("#edit-check").render())
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: run.finished_at is not None, 60, "the run")
        assert run.result == "written"
        assert (session.workspace / "STAGED.txt").read_text() == "staging"
        assert not (session.workspace / "RELEASED.txt").exists()
        [record] = session.records.values()
        assert record.decision.response.edited_args == {"path": "STAGED.txt", "content": "staging"}
        assert record.decision.audit.via == "console (edited)" and "write_file" in record.decision.audit.shown


async def test_an_editor_with_bad_json_does_not_approve(tmp_path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        start(app, session, 1)
        await waiting(pilot, session, 1)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditArgsScreen), 60, "the editor")
        app.screen.query_one("#edit-args").text = "[1, 2"
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, EditArgsScreen) and "not JSON" in str(app.screen.query_one("#edit-check").render())
        await pilot.press("escape")
        assert len(session.pending()) == 1  # back to the decision, unanswered


async def test_batch_approves_every_alike_decision_in_two_keys(tmp_path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        runs = start(app, session, 3)
        await waiting(pilot, session, 3)
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, BatchScreen), 60, "the batch preview")
        assert len(app.screen.query_one("#batch-list").selected) == 3
        await pilot.press("a")
        await wait_until(pilot, lambda: all(r.finished_at for r in runs), 60, "the runs")
        assert [r.result for r in runs] == ["written"] * 3
        decisions = [rec.decision for rec in session.records.values()]
        assert len({d.escalation_id for d in decisions}) == 3  # each its own decision
        assert all(d.resolved_by is ResolvedBy.HUMAN and d.audit.via.startswith("console batch of 3") for d in decisions)


async def test_batch_deny_of_the_selected_only(tmp_path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        runs = start(app, session, 2)
        await waiting(pilot, session, 2)
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, BatchScreen), 60, "the batch preview")
        await pilot.press("space")  # the first one is left out
        await pilot.press("n")
        await wait_until(pilot, lambda: sum(1 for r in runs if r.finished_at) == 1, 60, "one run")
        assert [r.result for r in runs if r.finished_at] == ["denied"]
        assert len(session.pending()) == 1


async def test_the_rules_screen_lists_counts_and_removes_a_taught_rule(tmp_path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        start(app, session, 2)
        await waiting(pilot, session, 2)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, TeachRuleScreen), 60, "the teach dialog")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not session.pending(), 60, "the released decisions")
        app.main.query_one("#runs").focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RulesScreen), 60, "the rules screen")
        table = app.screen.query_one("#rules-table")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        taught = next(r for r in rows if r[5])
        assert taught[0].endswith("rules.yaml:7") and taught[1] == "task deploy" and taught[2] == "allow"
        assert taught[3] == "2"  # matched: the two requests it settled
        assert any(r[0].startswith("rules/default.yaml") for r in rows)  # the shipped ones, listed too
        table.move_cursor(row=rows.index(taught))
        await pilot.press("x")
        await pilot.pause()
        assert load_rules(tmp_path / "rules.yaml").override("deploy").rules == ()
        assert "# keep this comment" in (tmp_path / "rules.yaml").read_text()
        table.move_cursor(row=table.row_count - 1)  # a shipped rule: not removable here
        await pilot.press("x")
        await pilot.pause()
        assert table.row_count == len(rows) - 1


async def test_history_filters_by_audit_shows_figures_and_exports(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    async with tool_console(tmp_path) as (session, app, pilot):
        runs = start(app, session, 2)
        await waiting(pilot, session, 2)
        await pilot.press("1")  # approve the first by hand
        await wait_until(pilot, lambda: len(session.pending()) == 1, 60, "one decided")
        await pilot.press("2")  # deny the second
        await wait_until(pilot, lambda: all(r.finished_at for r in runs), 60, "the runs")
        await pilot.press("h")
        from tui.screens.history import HistoryScreen

        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), 60, "history")
        metrics = str(app.screen.query_one("#history-metrics").render())
        assert "security_concern: 2 decided, 50% approved" in metrics and "helper: 2 decided" in metrics
        app.screen.query_one("#history-filter-text").value = "via:console edited:no tool:write"
        await pilot.pause()
        assert app.screen.query_one("#history-table").row_count == 2
        app.screen.query_one("#history-filter-text").value = "by:rule"
        await pilot.pause()
        assert app.screen.query_one("#history-table").row_count == 0
        app.screen.query_one("#history-filter-text").value = ""
        await pilot.pause()
        app.screen.query_one("#history-table").focus()
        await pilot.press("x")
        [export] = list(tmp_path.glob("escalate-history-*.jsonl"))
        lines = [json.loads(line) for line in export.read_text().splitlines()]
        assert sorted(line["selectedOption"] for line in lines) == ["approve", "deny"]
        assert all(line["via"] == "console" and line["resolvedBy"] == "human" and line["tool"] == "write_file"
                   and line["waitedSeconds"] >= 0 and "Allow helper" in line["shown"] for line in lines)
