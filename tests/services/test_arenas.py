"""A process that opens its services keeps at most ARENAS glibc malloc arenas, however many threads
allocate (DBOS's pool has 16: each kept an arena of its own, with the free chunks a burst left
in it; engine/kernel/memory.py few_arenas). Counted by glibc itself (malloc_info's heaps), in a
real process on a real SQLite file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import asyncio, ctypes, sys, threading
from engine.services import open_services

def heaps() -> int:
    libc = ctypes.CDLL(None)
    libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
    out = libc.fopen(sys.argv[2].encode(), b"w")
    libc.malloc_info(0, out)
    libc.fclose(out)
    return open(sys.argv[2]).read().count("<heap nr=")

async def main() -> None:
    services = await open_services(sys.argv[1], identity="test")
    try:
        gate = threading.Barrier(17)
        kept = []

        def allocate() -> None:  # each thread's first malloc while all the others are alive
            kept.append([bytearray(4096) for _ in range(64)])
            gate.wait()

        threads = [threading.Thread(target=allocate) for _ in range(16)]
        for thread in threads:
            thread.start()
        gate.wait()
        print(heaps())
        for thread in threads:
            thread.join()
    finally:
        services.close()

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_sixteen_threads_allocating_share_a_few_malloc_arenas(tmp_path: Path) -> None:
    from engine.kernel.memory import ARENAS

    done = subprocess.run([sys.executable, "-c", CHILD, f"sqlite:///{tmp_path / 'escalate.db'}", str(tmp_path / "info.xml")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert 1 <= int(done.stdout.split()[-1]) <= ARENAS
