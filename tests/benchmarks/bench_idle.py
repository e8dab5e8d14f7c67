"""Idle CPU of processes that wait: `escalate worker` and a console's services (the console's
`open_services`, without its screen), on a fresh SQLite file, nothing queued. Prints CPU ms a
second over a window (utime + stime from /proc/PID/stat), after a settling pause.

    PYTHONPATH=. python tests/benchmarks/bench_idle.py [--window 10] [--rounds 3]

The code measured is the one PYTHONPATH names (compare two trees by running it twice, interleaved
with --rounds)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONSOLE = """
import asyncio, sys
from engine.services import open_services
async def main():
    services = await open_services(sys.argv[1], identity="console", hear_everything=True)
    print("taking up to: ready", file=sys.stderr, flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def idle_ms_per_s(argv: list[str], folder: Path, settle: float, window: float) -> float:
    log = folder / "err.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL, stderr=err)
    try:
        end = time.monotonic() + 120
        while "taking up to" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"did not start: {log.read_text()[-1000:]}")
            time.sleep(0.05)
        time.sleep(settle)
        before, start = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(window)
        return (cpu_seconds(proc.pid) - before) * 1000 / (time.monotonic() - start)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            url = f"sqlite:///{folder / 'escalate.db'}"
            worker = idle_ms_per_s([sys.executable, "-m", "engine", "worker", "--db", url], folder, args.settle, args.window)
            console = idle_ms_per_s([sys.executable, "-c", CONSOLE, url], folder, args.settle, args.window)
        print(f"idle CPU ms/s: worker {worker:.1f}, console services {console:.1f} (load {os.getloadavg()[0]:.1f})",
              flush=True)


if __name__ == "__main__":
    main()
