"""A fuzz of the news between processes (issue 22): random bytes, truncated messages, forged
ids, other runs' ids, bodies carrying decisions and requests, sent as datagrams to every
listening socket of a SQLite database (what any process of the same user can do). Never a
decision, never a changed pane (what a console lists is what the database holds), never a
traceback (nothing logged by the brokers' news readers)."""

from __future__ import annotations

import asyncio
import itertools
import logging

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.durable.feed as feed_module
from tests.workers.test_forged_news import World, approval, forged_approval, forged_raise, sqlite_forger
from tests.workers.test_news import until

TARGET = "r1.1"  # a tool call waiting in the worker
OTHER = "r2.1"  # another run's request, listed by the console
IDS = st.sampled_from([TARGET, OTHER, "r1.2", "r2.2", "r1", "", " ", "*", "r1.1 r2.1", "x" * 200, "r1.1\x00", "\udcff"])


def structured() -> st.SearchStrategy[bytes]:
    kinds = st.sampled_from(["raised", "decided", "withdrawn", "*", "Decided", "raised\n", "changed", ""])
    ids = st.lists(st.one_of(IDS, st.text(max_size=12)), max_size=5)
    bodies = st.sampled_from(["", "\n{}", "\n[", "\nnull", "\n{\"escalation\": 1}"])

    def build(kind: str, named: list[str], body: str) -> bytes:
        return f"{kind} {' '.join(named)}{body}".encode("utf-8", "surrogateescape")

    return st.builds(build, kinds, ids, bodies)


FORGED = st.sampled_from([forged_approval(TARGET), forged_approval(OTHER), forged_raise("r1.2", "echo hi", 60.0),
                          forged_raise(TARGET, "echo hi", 60.0), forged_raise(OTHER, "echo hi", 60.0)])
TRUNCATED = st.builds(lambda message, cut: message[:cut], FORGED, st.integers(0, 400))
# At most 6 per example: a Unix datagram socket queues 10 (net.unix.max_dgram_qlen), and past that
# a send is dropped (news is a hint: the poll catches up, but this test sets the poll to an hour),
# so more could drop the sentinel's own news when the listening thread is slow (a loaded host).
MESSAGES = st.lists(st.one_of(st.binary(max_size=300), structured(), FORGED, TRUNCATED), min_size=1, max_size=6)


def test_no_news_decides_changes_what_is_shown_or_breaks_a_reader(tmp_path, monkeypatch, caplog) -> None:
    """One worker and one console for every example (hypothesis drives a loop of their own)."""
    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    caplog.set_level(logging.DEBUG, logger=feed_module.log.name)
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    loop = asyncio.new_event_loop()
    world = World(url)
    target, other = approval(TARGET, "rm -r build"), approval(OTHER, "make deploy")
    sentinels = itertools.count()

    async def begin() -> None:
        await world.start()
        world.ask(target)
        world.ask(other)
        await until(lambda: world.console.get(TARGET) is not None and world.console.get(OTHER) is not None)

    async def heard(messages: list[bytes]) -> None:
        forge(messages)
        await world.news_heard(f"s{next(sentinels)}.1")

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(MESSAGES)
    def one_example(messages: list[bytes]) -> None:
        loop.run_until_complete(heard(messages))
        assert not world.asked[TARGET].done() and not world.asked[OTHER].done()
        assert world.console.get(TARGET) == target and world.console.get(OTHER) == other
        assert {p.escalation.id for p in world.console.pending()} == world.console_db.pending_ids()
        assert not [r for r in caplog.records if r.exc_info or "failed" in r.getMessage()]

    try:
        loop.run_until_complete(begin())
        forge = sqlite_forger(url)
        one_example()
        for esc_id in (TARGET, OTHER):
            row = world.console_db.get_escalation(esc_id)
            assert row["status"] == "pending" and row["decision"] is None
    finally:
        world.close()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
