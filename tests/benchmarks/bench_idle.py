"""What processes that wait cost: CPU (ms a second, utime + stime from /proc/PID/stat, over a
window after a settling pause) of `escalate worker` and of a console's services (the console's
`open_services`, without its screen) on a fresh SQLite file, nothing queued; and the memory of
`run --wait` holding a run at its approval (bench_peer.py's workload: the agent's first model turn
asks), as VmRSS with its anonymous and file-backed parts, its threads, and its idle CPU.

    python tests/benchmarks/bench_idle.py [--window 10] [--rounds 3] [--tree NAME=PATH ...]
    python tests/benchmarks/bench_idle.py --groups [--tree NAME=PATH ...]

`--groups`: what a `run --wait` that made a model turn holds, by group of modules: a fresh
interpreter imports each group in a `run`'s order (ADK's and genai's under the warm-up's settings,
engine/runtime/adk_setup.py `warming`), then runs ADK's warm-up; each line is the RSS (anonymous,
file-backed) and the modules the group adds (docs/startup.md, what a waiting `run --wait` holds).

Each tree is measured in its own processes (PYTHONPATH=PATH), trees interleaved round by round
(old, new, old, new: the shared machines vary by a factor of two from one minute to the next);
without --tree, the checkout this file is in."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
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

# bench_peer.py's workload: one scripted agent whose first turn asks for an approval.
AGENT_ASKS = 'prompt p: """Answer."""\nagent a:\n    instruction p\nflow main:\n    $x = run agent a $input\n    return $x\n'
AGENT_ASKS_SCRIPT = ("agents:\n  a:\n    - escalate: {reason: architecture_decision, question: 'Go on?', "
                     "options: [{id: go, label: Go}]}\n    - 'went on'\n")


# (group, the modules imported for it, in a `run`'s order); "warming" opens the warm-up's settings.
GROUPS = [
    ("the interpreter, asyncio, sqlite3, json, argparse", ["asyncio", "sqlite3", "json", "argparse"]),
    ("SQLAlchemy core, its SQLite dialect (escalate's database layer)", ["sqlalchemy", "sqlalchemy.dialects.sqlite"]),
    ("pydantic, PyYAML, re2, escalate's modules of a run", ["pydantic", "yaml", "re2", "engine.cli.run_cmd",
                                                             "engine.services.wiring", "engine.durable.host",
                                                             "engine.runtime.engine"]),
    ("psycopg and its binary (dbos/_utils.py, at `import dbos`)", ["psycopg"]),
    ("sqlalchemy.orm, .ext.asyncio, the PostgreSQL dialect (DBOS's)", ["sqlalchemy.orm", "sqlalchemy.ext.asyncio",
                                                                       "sqlalchemy.dialects.postgresql"]),
    ("DBOS and the rest it imports (click, dateutil, croniter...)", ["dbos"]),
    ("warming", []),
    ("genai's dependencies: httpx, google.auth, websockets, anyio, tenacity",
     ["httpx", "google.auth", "google.auth.transport.mtls", "websockets.asyncio.client", "anyio", "tenacity"]),
    ("google.genai (its client and types)", ["google.genai"]),
    ("google.adk.runners, .agents, .models", ["google.adk.runners", "google.adk.agents", "google.adk.models"]),
    ("opentelemetry (ADK's telemetry)", ["opentelemetry.metrics", "opentelemetry.trace", "opentelemetry._logs"]),
    ("fastapi.openapi.models, starlette (google.adk.auth)", ["fastapi.openapi.models"]),
    ("requests, urllib3, charset_normalizer (authlib's, ADK's)", ["requests"]),
    ("cryptography (joserfc's)", ["cryptography.x509", "cryptography.hazmat.primitives.asymmetric.ec"]),
    ("joserfc, authlib (google.adk.auth)", ["joserfc.jwt", "authlib.integrations.requests_client"]),
]
GROUPS_SCRIPT = """
import importlib, json, sys
def rss():
    found = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {k: int(found[k].split()[0]) / 1024 for k in ("RssAnon", "RssFile")}
rows, warming = [], None
for name, modules in json.loads(sys.argv[1]) + [["ADK's imports at its first run, and the warm-up's run", ["*"]]]:
    before, count = rss(), len(sys.modules)
    if name == "warming":
        from engine.runtime import adk_setup
        adk_setup.prepare_adk()
        warming = adk_setup.warming()
        warming.__enter__()
        continue
    if modules == ["*"]:
        warming.__exit__(None, None, None)
        from engine.runtime.engine import warm_up
        warm_up()
        modules = []
    for module in modules:
        importlib.import_module(module)
    after = rss()
    rows.append([name, after["RssAnon"] - before["RssAnon"], after["RssFile"] - before["RssFile"], len(sys.modules) - count])
print(json.dumps({"rows": rows, "total": rss(), "modules": len(sys.modules)}))
"""


def groups(trees: dict[str, Path]) -> None:
    """The RSS each group of modules adds, per tree (deterministic: one launch each)."""
    found = {}
    for name, tree in trees.items():
        done = subprocess.run([sys.executable, "-c", GROUPS_SCRIPT, json.dumps(GROUPS)], env=_env(tree),
                              cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=300)
        if done.returncode:
            raise SystemExit(f"{name}: {done.stderr[-2000:]}")
        found[name] = json.loads(done.stdout)
    print("MiB added (anonymous + file-backed), modules added: " + ", ".join(trees))
    for i, row in enumerate(next(iter(found.values()))["rows"]):
        print(f"{row[0]:72}" + "".join(
            f"  {f['rows'][i][1]:5.1f} + {f['rows'][i][2]:4.1f} ({f['rows'][i][3]:4d})" for f in found.values()))
    print(f"{'total RSS (anonymous + file-backed), modules':72}" + "".join(
        f"  {f['total']['RssAnon']:5.1f} + {f['total']['RssFile']:4.1f} ({f['modules']:4d})" for f in found.values()))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def status(pid: int) -> dict[str, int]:
    """/proc/PID/status's numeric fields (kB for the memory ones)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if value.split() and value.split()[0].isdigit():
            found[name] = int(value.split()[0])
    return found


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # compiled once, as a user's
    env["PYTHONPATH"] = str(tree)
    return env


def _watch(proc: subprocess.Popen, settle: float, window: float) -> float:
    """CPU ms a second of `proc` over `window`, after `settle` seconds."""
    time.sleep(settle)
    before, start = cpu_seconds(proc.pid), time.monotonic()
    time.sleep(window)
    return (cpu_seconds(proc.pid) - before) * 1000 / (time.monotonic() - start)


def idle_ms_per_s(argv: list[str], folder: Path, env: dict[str, str], settle: float, window: float) -> float:
    log = folder / "err.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        end = time.monotonic() + 120
        while "taking up to" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"did not start: {log.read_text()[-1000:]}")
            time.sleep(0.05)
        return _watch(proc, settle, window)
    finally:
        proc.terminate()
        proc.wait(30)


def run_wait(folder: Path, env: dict[str, str], settle: float, window: float) -> dict[str, float]:
    """`run --wait` of the agent-asks workload, once it waits on its approval: VmRSS, RssAnon and
    RssFile (MiB), threads, and idle CPU (ms/s)."""
    (folder / "agentask.sr").write_text(AGENT_ASKS)
    (folder / "agentask.yaml").write_text(AGENT_ASKS_SCRIPT)
    argv = [sys.executable, "-m", "engine", "run", "agentask.sr", "--input", "v1", "--wait",
            "--db", f"sqlite:///{folder / 'wait.db'}"]
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            if "escalate answer" in line:
                break
        else:
            raise SystemExit(f"run --wait ended ({proc.wait()}) without waiting")
        cpu = _watch(proc, settle, window)
        found = status(proc.pid)
        return {"run --wait at its approval: RSS (MiB)": found["VmRSS"] / 1024,
                "run --wait: anonymous (MiB)": found["RssAnon"] / 1024,
                "run --wait: file-backed (MiB)": found["RssFile"] / 1024,
                "run --wait: threads": found["Threads"],
                "run --wait: idle CPU (ms/s)": cpu}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--groups", action="store_true", help="only the RSS each group of modules adds")
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, _, path in (spec.partition("=") for spec in args.tree)} \
        or {"this": Path(__file__).resolve().parents[2]}
    if args.groups:
        groups(trees)
        return
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    print(f"load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds, trees interleaved: "
          + ", ".join(f"{name}={path}" for name, path in trees.items()), flush=True)
    for _ in range(args.rounds):
        for name, tree in trees.items():
            env = _env(tree)
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                url = f"sqlite:///{folder / 'escalate.db'}"
                found = {"worker: idle CPU (ms/s)": idle_ms_per_s(
                             [sys.executable, "-m", "engine", "worker", "--db", url], folder, env, args.settle, args.window),
                         "console services: idle CPU (ms/s)": idle_ms_per_s(
                             [sys.executable, "-c", CONSOLE, url], folder, env, args.settle, args.window),
                         **run_wait(folder, env, min(args.settle, 2.0), args.window)}
            for figure, value in found.items():
                figures[name].setdefault(figure, []).append(value)
            print(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in found.items())
                  + f" (load {os.getloadavg()[0]:.1f})", flush=True)
    names = list(next(iter(figures.values())))
    width = max(len(n) for n in names)
    print(f"{'median (min)':{width}}  " + "  ".join(f"{name:>14}" for name in trees))
    for figure in names:
        print(f"{figure:{width}}  " + "  ".join(
            f"{statistics.median(figures[n][figure]):8.1f} ({min(figures[n][figure]):.1f})".rjust(14) for n in trees))


if __name__ == "__main__":
    main()
