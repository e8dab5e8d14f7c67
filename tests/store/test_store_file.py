"""The store file: every kind of line round-trips, times follow the wall clock, a torn last line
is ignored then cut, every other bad line is refused with its exact position."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from engine.escalation.agent_policy import HistoryEntry
from engine.escalation.clock import FakeClock
from engine.escalation.model import (
    Decision,
    Escalation,
    OnTimeout,
    Option,
    Origin,
    PendingEscalation,
    Reason,
    ResolvedBy,
    Response,
    ResponseType,
    TimeoutPolicy,
)
from engine.escalation.store import SUMMARY_LIMIT, HistoryStore, StoreError
from engine.runtime.engine import RunHandle, RunStatus
from tests.store.store_helpers import WALL, agent_line, open_store


def escalation(esc_id: str = "esc-1", at: float = 1000.0) -> PendingEscalation:
    esc = Escalation(
        id=esc_id, task_id="deploy-production", run_id="r1-abc", agent="deployer", reason=Reason.BREAKING_CHANGE,
        question="Ship [prod] now?", context="v1.4.2 drops /v1", allow_agent_decision=True, timeout=90,
        options=(Option("ship", "Ship it", "all tests pass", True), Option("wait", "Wait")),
        origin=Origin.TOOL_APPROVAL, created_at=at,
    )
    return PendingEscalation(esc, TimeoutPolicy(at + 90, OnTimeout.OPTION, "wait", 90), {"tool": "deploy", "args": {"n": 1}})


def test_every_kind_round_trips_with_wall_clock_times(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    clock = FakeClock(1000.0)
    store = open_store(path, clock)
    first, second, third = escalation("esc-1"), escalation("esc-2", 1001.0), escalation("esc-3", 1002.0)
    decision = Decision("esc-1", Response(ResponseType.OPTION, "ship", None, "after 18:00"), ResolvedBy.HUMAN,
                        1030.5, "", False)
    timeout = Decision("esc-2", Response(ResponseType.OPTION, "wait"), ResolvedBy.TIMEOUT_DEFAULT, 1091.0,
                       "nobody answered within 90 s", True)
    store.write_raised(first)
    store.write_raised(second)
    store.write_raised(third)
    store.write_resolved(decision)
    store.write_resolved(timeout)
    clock.advance(5)
    store.write_withdrawn("esc-3")
    store.write_agent_entry(HistoryEntry(1010.0, "codebase_locator", "codebase_analyzer", True, "analyze", "how", None))
    store.write_agent_entry(HistoryEntry(1011.0, "codebase_analyzer", "codebase_locator", False, "find", "store", "loop"))
    run = RunHandle("r1-abc", "deploy-production", "deploy-production", "main", "v1.4.2", RunStatus.DONE,
                    started_at=1001.0, finished_at=1042.0, result={"shipped": True, "notes": "x" * 900})  # clock times
    store.write_run(run)
    store.close()

    lines = [json.loads(text) for text in path.read_text().splitlines()]
    assert [entry["kind"] for entry in lines] == ["raised"] * 3 + ["resolved"] * 2 + ["withdrawn"] + ["agent_escalation"] * 2 + ["run"]
    assert all(entry["v"] == 1 for entry in lines)
    assert lines[0]["at"] == "2025-11-22T04:00:00.000Z"  # clock 1000 at wall WALL
    assert lines[3]["at"] == "2025-11-22T04:00:30.500Z"
    assert lines[0]["policy"]["deadline"] == "2025-11-22T04:01:30.000Z"

    # A later session: its clock reads 50 at wall WALL + 3 days; every time lands on its scale.
    later = open_store(path, FakeClock(50.0), wall=WALL + 3 * 86400)
    contents = later.load()
    shift = 50.0 - 3 * 86400 - 1000.0  # this session's clock reading for the first one's clock 0
    got = {e.pending.escalation.id: e for e in contents.escalations}
    assert list(got) == ["esc-1", "esc-2", "esc-3"]
    assert got["esc-1"].pending.escalation == replace(first.escalation, created_at=1000.0 + shift)
    assert got["esc-1"].pending.policy == TimeoutPolicy(1090.0 + shift, OnTimeout.OPTION, "wait", 90)
    assert got["esc-1"].pending.extra == {"tool": "deploy", "args": {"n": 1}}
    assert got["esc-1"].decision == Decision("esc-1", decision.response, ResolvedBy.HUMAN, 1030.5 + shift, "", False)
    assert got["esc-2"].decision is not None and got["esc-2"].decision.stops_task
    assert got["esc-2"].decision.note == "nobody answered within 90 s"
    assert got["esc-3"].decision is None and got["esc-3"].withdrawn
    assert contents.agent_entries == [
        HistoryEntry(1010.0 + shift, "codebase_locator", "codebase_analyzer", True, "analyze", "how", None),
        HistoryEntry(1011.0 + shift, "codebase_analyzer", "codebase_locator", False, "find", "store", "loop"),
    ]
    [stored_run] = contents.runs
    assert (stored_run.id, stored_run.workflow, stored_run.flow, stored_run.input, stored_run.status) == (
        "r1-abc", "deploy-production", "main", "v1.4.2", "done")
    assert stored_run.result is not None and stored_run.result.startswith('{"shipped": true')
    assert len(stored_run.result) == SUMMARY_LIMIT
    assert stored_run.finished_at - stored_run.started_at == pytest.approx(41.0)
    assert stored_run.finished_at == pytest.approx(later.to_clock(WALL + 42.0))
    later.close()


def test_ids_repeat_across_sessions_and_close_the_latest_open_one(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    for _ in range(2):  # two sessions, both numbering from esc-1
        store = open_store(path)
        store.write_raised(escalation("esc-1"))
        store.write_resolved(Decision("esc-1", Response(ResponseType.SKIP), ResolvedBy.HUMAN, 1001.0))
        store.close()
    store = open_store(path)
    store.write_raised(escalation("esc-1"))  # a session that ended (crashed) with it open
    store.close()
    contents = open_store(path).load()
    assert [(e.decision is not None, e.withdrawn) for e in contents.escalations] == [(True, False), (True, False), (False, False)]


def test_torn_last_line_is_ignored_then_cut_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    whole = agent_line("a", "b")
    path.write_text(whole + whole[:37])  # a crash in the middle of the second line
    store = open_store(path)
    assert store.torn
    assert len(store.load().agent_entries) == 1
    assert path.read_text() == whole + whole[:37]  # reading changes nothing
    store.write_agent_entry(HistoryEntry(1000.0, "c", "d", True, "r", "t", None))
    store.close()
    text = path.read_text()
    assert text.startswith(whole) and text.count("\n") == 2 and text.endswith("\n")
    assert [e.source for e in open_store(path).load().agent_entries] == ["a", "c"]


def test_a_file_without_any_newline_is_one_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"v":1,"kind":"ag')
    store = open_store(path)
    assert store.load().agent_entries == []
    store.write_withdrawn("esc-9")  # the fragment goes; the line is the file's first
    store.close()
    assert path.read_text().startswith('{"v":1,"kind":"withdrawn"')


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
        open_store(path).load()
    text = str(caught.value)
    assert text.startswith(f"{path}:2:{col}: error: {message}")
    assert "\n" not in text
    assert path.read_bytes() == before


def test_not_utf8_is_a_positioned_error(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(agent_line("a", "b").encode() + b'{"v":1,\xff}\n')
    with pytest.raises(StoreError, match=rf"^{path}:2:8: error: not UTF-8 text$"):
        open_store(path).load()


def test_a_missing_folder_is_created(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "history.jsonl"
    store = open_store(path)
    assert path.is_file() and path.stat().st_size == 0
    assert store.load().escalations == []
    store.close()


@pytest.mark.parametrize("where", ["directory", "under_a_file"])
def test_an_unusable_path_is_one_line(tmp_path: Path, where: str) -> None:
    (tmp_path / "file").write_text("x")
    path = tmp_path if where == "directory" else tmp_path / "file" / "history.jsonl"
    with pytest.raises(StoreError) as caught:
        HistoryStore.open(path, FakeClock())
    assert str(caught.value).startswith(f"{path}: error: cannot open the store: ")
    assert "\n" not in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("")
    path.chmod(0o444)
    with pytest.raises(StoreError, match="Permission denied"):
        HistoryStore.open(path, FakeClock())


def test_appends_from_many_threads_never_mix_lines(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "h.jsonl"
    store = open_store(path)

    def write(n: int) -> None:
        for i in range(200):
            store.write_agent_entry(HistoryEntry(1000.0 + i, f"agent{n}", "b" * 300, True, "r", "t", None))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    entries = open_store(path).load().agent_entries
    assert len(entries) == 800
    assert sorted({e.source for e in entries}) == ["agent0", "agent1", "agent2", "agent3"]


def test_nothing_is_written_before_the_store_is_released(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(agent_line("a", "b"))
    store = open_store(path, release=False)
    store.write_withdrawn("esc-1")
    assert path.read_text() == agent_line("a", "b")  # held while the file is being read
    store.load()
    store.release()
    store.write_withdrawn("esc-2")
    assert [json.loads(x).get("id") for x in path.read_text().splitlines()] == [None, "esc-1", "esc-2"]
    broken = open_store(tmp_path / "b.jsonl", release=False)
    broken.write_withdrawn("esc-3")
    broken.close()  # never released (its load failed): the held line is dropped
    assert (tmp_path / "b.jsonl").read_text() == ""
