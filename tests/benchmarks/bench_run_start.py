"""Cold start of `escalate run` (fresh processes, durable on SQLite): the time from launching
the command to its `run <id>` line on stderr (the database, DBOS, the broker and the engine are
open and the run has started: its first agent turn begins), and to its exit (a 6-turn scripted
flow). Also the import time of `escalate runs` (a command that only reads the database), from
`python -X importtime`. Prints figures, asserts nothing.

    python tests/benchmarks/bench_run_start.py [LAUNCHES]
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "runtime" / "data"


def launch(db: Path, workspace: Path) -> tuple[float, float]:
    command = [sys.executable, "-m", "engine", "run", str(DATA / "loops.sr"), "--script", str(DATA / "loops.yaml"),
               "--db", f"sqlite:///{db}"]
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    first = None
    for line in proc.stderr:
        if first is None and line.startswith("run "):
            first = time.perf_counter() - started
    proc.wait()
    ended = time.perf_counter() - started
    if proc.returncode != 0 or first is None:
        raise SystemExit(f"escalate run failed ({proc.returncode})")
    return first, ended


def import_time(db: Path, workspace: Path) -> tuple[float, bool, bool]:
    """Total import time of `escalate runs` (ms, the top-level modules' cumulative sum), and
    whether ADK / DBOS were imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "engine", "runs", "--db", f"sqlite:///{db}"],
                          cwd=workspace, capture_output=True, text=True, check=True)
    total = 0
    names = set()
    for line in proc.stderr.splitlines():
        found = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if found:
            names.add(found.group(3))
            if len(found.group(2)) == 1:  # a top-level import: its cumulative time counts once
                total += int(found.group(1))
    return total / 1000, any(n.startswith("google.adk") for n in names), any(n.startswith("dbos") for n in names)


def main() -> None:
    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        db = workspace / "runs.db"
        launch(db, workspace)  # the database is created once, as it is after a first run
        firsts, ends = zip(*(launch(db, workspace) for _ in range(launches)))
        print(f"escalate run, launch -> 'run <id>' (first turn): median {statistics.median(firsts) * 1000:.0f} ms, "
              f"min {min(firsts) * 1000:.0f} ms ({launches} launches)")
        print(f"escalate run, launch -> exit (6 turns): median {statistics.median(ends) * 1000:.0f} ms, "
              f"min {min(ends) * 1000:.0f} ms")
        times = [import_time(db, workspace) for _ in range(5)]
        print(f"escalate runs, imports: median {statistics.median(t[0] for t in times):.0f} ms, "
              f"min {min(t[0] for t in times):.0f} ms; ADK imported: {times[0][1]}; DBOS imported: {times[0][2]}")


if __name__ == "__main__":
    main()
