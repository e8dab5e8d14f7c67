"""What opening escalate's database costs once it is up to date (issue 23, schema versions):
every `escalate runs` / `answer` / hook process pays it once.

Prints, for SQLite and PostgreSQL (a server this script starts: tests/pg_server.py; skipped
without one), the median and p90 of `Database(url)` then `close()` on a database already
created, over N opens, the first one dropped. Asserts nothing; the host is shared, so the load
average is printed too.

Run: PYTHONPATH=. python tests/benchmarks/bench_open.py [--opens N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from engine.durable.database import Database


def opens(url: str, n: int) -> list[float]:
    Database(url).close()  # created (or upgraded) once: what follows is the everyday open
    times = []
    for _ in range(n + 1):
        start = time.perf_counter()
        Database(url).close()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times[1:])


def say(name: str, times: list[float]) -> None:
    print(f"{name:<11} open+close: median {statistics.median(times):6.2f} ms, "
          f"p90 {times[int(len(times) * 0.9)]:6.2f} ms ({len(times)} opens)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--opens", type=int, default=200)
    n = parser.parse_args().opens
    print(f"load average: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        say("SQLite", opens(f"sqlite:///{Path(folder) / 'escalate.db'}", n))
    from tests.pg_server import NoPostgres, PostgresServer

    try:
        server = PostgresServer().start()
    except NoPostgres as exc:
        print(f"PostgreSQL: skipped ({exc})")
        return
    try:
        say("PostgreSQL", opens(server.new_database(), n))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
