"""A process that stops hearing news ends its listening thread at once (issue 26): closing the
socket does not end a recv() under way, and every `run`, `resume` and worker waited for the
thread's next poll (0.5 s) before it could exit."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from engine.durable import signals
from engine.durable.signals import SocketSignals

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets")


def test_close_wakes_the_listening_thread_instead_of_waiting_for_its_poll(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signals, "_POLL_SECONDS", 3600.0)  # only the wake can end the thread now
    before = set(threading.enumerate())
    news, sender = SocketSignals(tmp_path / "runs.db"), SocketSignals(tmp_path / "runs.db")
    heard: list[str] = []
    arrived = threading.Event()
    news.listen(lambda message: (heard.append(message), arrived.set()))
    [listening] = [t for t in threading.enumerate() if t not in before]
    sender.committed("raised r1.1")  # it still hears news until it is closed
    assert arrived.wait(10)
    news.close()
    sender.close()
    assert not listening.is_alive()
    assert heard == ["raised r1.1"]  # the wake is not news
