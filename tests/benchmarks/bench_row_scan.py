"""What checking a database's rows costs at open and per continued run (engine/durable/serialization.py
`scan`), on SQLite, with N recorded runs made by the demo: prints milliseconds.

    PYTHONPATH=. python tests/benchmarks/bench_row_scan.py [RUNS]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = Path(__file__).parents[2] / "engine" / "demo"


def main(runs: int) -> None:
    from engine.durable.database import Database
    from engine.durable.serialization import scan

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/escalate.db"
        ids = []
        for _ in range(runs):
            proc = subprocess.run([sys.executable, "-m", "engine", "run", str(DEMO / "auth-refactor.sr"), "--script",
                                   str(DEMO / "auth-refactor.yaml"), "--input", "Fix login", "--db", url],
                                  cwd=folder, capture_output=True, text=True)
            ids.append(proc.stderr.splitlines()[0].removeprefix("run "))
        db = Database(url)
        for label, call in (("whole database", lambda: scan(db.engine)), ("one run", lambda: scan(db.engine, ids[0]))):
            times = []
            for _ in range(20):
                start = time.perf_counter()
                assert call() == []
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            print(f"scan, {label}, {runs} runs: median {times[10]:.2f} ms, max {times[-1]:.2f} ms")
        db.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
