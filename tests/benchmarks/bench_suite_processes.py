"""How many processes the tests start, and their CPU time: the suite is CPU-bound on 2 cores
(`.ci/run`: 1,165 CPU seconds in 652 s, 178%), most of it processes the tests start. Prints
numbers.

    python tests/benchmarks/bench_suite_processes.py [PYTEST ARGS...]   # e.g. tests/durable -n 2

Runs pytest with suite_probe/ on PYTHONPATH: every Python process started during a test logs
its command and, when it ends normally, its CPU seconds (tests/benchmarks/suite_probe). Then
prints the processes per kind (`engine run`, `engine answer`, a script...) and per test file,
with their CPU seconds (killed ones count, without CPU), and pytest's own CPU time.
Not seen: a process a test starts with a PYTHONPATH of its own (tests/acp/test_acp_cli.py,
tests/runtime/test_events_file.py...), nor programs other than Python (node, Chromium, PostgreSQL):
the first line's CPU (pytest and every process it waited for) counts those it waited for.
"""

from __future__ import annotations

import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("suite_probe")


def kind(argv: list[str]) -> str:
    if argv[:2] == ["-m", "engine"]:
        return "engine " + (argv[2] if len(argv) > 2 else "console")
    if argv and argv[0] in ("-c", "-m"):
        return " ".join(argv[:2])[:40]
    return Path(argv[0]).name if argv else "?"


def summary(log: Path, top: int = 25) -> None:
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    ends = {r["pid"]: r["cpu"] for r in rows if r["kind"] == "exit"}
    starts = [r for r in rows if r["kind"] == "start"]
    by_kind: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0])
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for row in starts:
        cpu = ends.get(row["pid"])
        k, f = by_kind[kind(row["argv"])], by_file[row["test"].split("::")[0]]
        k[0] += 1
        f[0] += 1
        if cpu is not None:
            k[1] += cpu
            k[2] += 1
            f[1] += cpu
    print(f"processes started by tests: {len(starts)}; ended normally: {len(ends)}; their CPU: {sum(ends.values()):.1f} s")
    print(f"{'count':>6} {'CPU s':>8} {'per end':>8}  kind")
    for name, (count, cpu, ended) in sorted(by_kind.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{count:6d} {cpu:8.1f} {cpu / max(ended, 1):8.2f}  {name}")
    print(f"{'count':>6} {'CPU s':>8}  test file")
    for name, (count, cpu) in sorted(by_file.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{count:6d} {cpu:8.1f}  {name}")


def main(args: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "processes.jsonl"
        path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(PROBE)]))
        env = {**os.environ, "SUITE_PROBE_LOG": str(log), "PYTHONPATH": path}
        done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, env=env)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"pytest exit {done.returncode}; CPU of pytest and every process under it: "
              f"{children.ru_utime + children.ru_stime:.1f} s")
        summary(log)


if __name__ == "__main__":
    main(sys.argv[1:])
