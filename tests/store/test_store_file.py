"""Reading a --store file (the JSON-lines history of earlier versions) to import it: every kind
of line is read with its wall-clock times, ids repeat across sessions, a torn last line is
ignored, every other bad line is refused with its exact position, and the file is never changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.escalation.store import StoreError, read_store, store_size
from tests.unprivileged import run_python
from tests.store.store_helpers import WALL, agent_line, line, raised_line, resolved_line, run_line


def test_every_kind_is_read_with_wall_clock_times(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(raised_line("esc-1") + resolved_line("esc-1") + raised_line("esc-2", "Other?")
                    + line("withdrawn", "2025-11-22T04:00:05.000Z", id="esc-2")
                    + agent_line("codebase_locator", "codebase_analyzer") + run_line())
    before = path.read_bytes()
    contents = read_store(path)
    first, second = contents.escalations
    assert first.earlier and first.pending.escalation.created_at == WALL
    assert first.decision.response.selected_option == "jwt" and first.decision.resolved_at == WALL + 1
    assert second.withdrawn and second.decision is None
    (entry,) = contents.agent_entries
    assert (entry.source, entry.target, entry.timestamp) == ("codebase_locator", "codebase_analyzer", WALL)
    (run,) = contents.runs
    assert (run.id, run.status, run.result, run.finished_at - run.started_at) == ("r1-aaaaaa", "done", "Plan ready", 3.0)
    assert path.read_bytes() == before


def test_ids_repeat_across_sessions_and_close_the_latest_open_one(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    # two sessions, both numbering from esc-1, then one that ended (crashed) with it open
    path.write_text((raised_line("esc-1") + resolved_line("esc-1")) * 2 + raised_line("esc-1"))
    contents = read_store(path)
    assert [(e.decision is not None, e.withdrawn) for e in contents.escalations] == [(True, False), (True, False), (False, False)]


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    whole = agent_line("a", "b")
    path.write_text(whole + whole[:37])  # a crash in the middle of the second line
    assert len(read_store(path).agent_entries) == 1
    path.write_text('{"v":1,"kind":"ag')  # no newline at all: one torn line
    assert read_store(path).agent_entries == []


@pytest.mark.parametrize(
    ("second_line", "at", "message"),
    [
        ('{"v":1,"kind":"run",}\n', 21, "not a JSON line: Expecting property name enclosed in double quotes"),
        ("[1, 2]\n", 1, "a store line must be a JSON object"),
        ('{"v":2,"kind":"run","at":"2025-11-22T04:00:00Z"}\n', '"v"',
         "unknown schema version 2 (written by a newer escalate); this escalate reads version 1"),
        ('{"v":1,"kind":"nap","at":"2025-11-22T04:00:00Z"}\n', '"kind"', "unknown kind 'nap'"),
        ('{"v":1,"kind":"agent_escalation","at":"yesterday"}\n', '"at"', "field 'at' is not an ISO 8601 time: 'yesterday'"),
        ('{"v":1,"kind":"agent_escalation","at":"2025-11-22T04:00:00Z","source":"a","target":7}\n', '"target"',
         "field 'target' must be text"),
        ('{"v":1,"kind":"agent_escalation","at":"2025-11-22T04:00:00Z","source":"a","target":"b","approved":1,'
         '"reason":"r","task":"t"}\n', '"approved"', "field 'approved' must be true or false"),
        ('{"v":1,"kind":"agent_escalation","at":"2025-11-22T04:00:00Z","source":"a","target":"b","approved":true,'
         '"reason":"r","task":"t","denial":"bored"}\n', '"denial"', "field 'denial': unknown value 'bored'"),
        ('{"v":1,"kind":"withdrawn","at":"2025-11-22T04:00:00Z"}\n', 1, "missing field 'id'"),
        ('{"v":1,"kind":"resolved","at":"2025-11-22T04:00:00Z","id":"esc-4"}\n', '"id"',
         "no open escalation 'esc-4' before this line"),
    ],
)
def test_a_bad_line_is_refused_with_its_position(tmp_path: Path, second_line: str, at: int | str, message: str) -> None:
    """`at`: the column, or the key whose opening quote the column must point at."""
    col = second_line.index(at) + 1 if isinstance(at, str) else at
    path = tmp_path / "h.jsonl"
    path.write_text(agent_line("a", "b") + second_line + agent_line("c", "d"))
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        read_store(path)
    text = str(caught.value)
    assert text.startswith(f"{path}:2:{col}: error: {message}")
    assert "\n" not in text
    assert path.read_bytes() == before


def test_not_utf8_is_a_positioned_error(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(agent_line("a", "b").encode() + b'{"v":1,\xff}\n')
    with pytest.raises(StoreError, match=rf"^{path}:2:8: error: not UTF-8 text$"):
        read_store(path)


def test_a_missing_file_is_an_empty_history(tmp_path: Path) -> None:
    assert store_size(tmp_path / "history.jsonl") == 0
    assert read_store(tmp_path / "history.jsonl").escalations == []


@pytest.mark.parametrize("where", ["directory", "under_a_file"])
def test_an_unusable_path_is_one_line(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_text("x")
    path = tmp_path if where == "directory" else tmp_path / "file" / "history.jsonl"
    with pytest.raises(StoreError) as caught:
        store_size(path)
    assert str(caught.value).startswith(f"{path}: error: cannot open the store: ")
    assert "\n" not in str(caught.value)


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    os.mkfifo(path)
    with pytest.raises(StoreError, match="cannot read the store"):
        read_store(path)


def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(agent_line("a", "b"))
    path.chmod(0o000)
    done = run_python("from pathlib import Path\n"
                      "from engine.escalation.store import StoreError, store_size\n"
                      "try:\n    store_size(Path('h.jsonl'))\n"
                      "except StoreError as e:\n    print(e)\n", tmp_path)
    assert "Permission denied" in done.stdout, done
