"""Start-up figures of the commands (issue 26, "Start in half a second"), in fresh processes,
durable on SQLite, for one or two source trees interleaved in one run (old, new, old, new...: the
shared machines vary by a factor of two from one minute to the next). Prints figures, asserts
nothing (the import budget itself is tests/test_import_budget.py; docs/startup.md).

- `run`, launch -> first turn done: the first `agent_result` event in `--events` (a flow of one
  scripted agent turn), and launch -> exit;
- `runs` and `answer`, launch -> exit, on a database holding one waiting run;
- `answer` + `resume` with no process waiting: launch of `answer` -> the resumed run's next
  turn done (its first `agent_result` event) and -> exit; once where the flow asked (a model
  turn follows), once where the agent asked (bench_peer.py's workload: its call goes on);
- the same workload answered and continued in one launch, `resume RUN --answers A.yaml`;
- idle memory (VmRSS) and CPU (ms a second, its polls): a `run --wait` process waiting on a
  person after one agent turn; the memory of the
  console (`escalate console FILE.sr --db ...` on a pseudo-terminal) once it has listed the
  waiting runs;
- ADK's warm-up alone (`engine.runtime.engine.warm_up`: ADK's imports and one scripted run),
  in a fresh process that has imported the engine: its CPU and the RSS it adds;
- the phases of a cold `run` of one turn, as CPU of the process (ms) at their ends: the CLI,
  rules and script read (launch -> `open_services` called), `open_services` (the database,
  DBOS imported and launched), -> the warm-up started (the workflow compiled, the run started),
  the warm-up (its thread), -> exit; and the collector's passes and their CPU;
- `python -X importtime` of each command: the top-level modules' cumulative sum;
- the CPU time (user + system) of each process, steadier than wall time on a loaded host.

    python tests/benchmarks/bench_run_start.py [--rounds N] [--tree NAME=PATH ...]

Without --tree it measures this checkout; e.g. `--tree old=/tmp/main0 --tree new=.`.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import resource
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Callable

TURN_THEN_DONE = 'prompt p: """Answer."""\nagent a:\n    instruction p\nflow main:\n    $x = run agent a $input\n    return $x\n'
ASK_THEN_TURN = ('prompt p: """Answer."""\nagent a:\n    instruction p\nflow main:\n'
                 '    $go = escalate to human "Ship " + $input + "?"\n    $x = run agent a $go\n    return $x\n')
TURN_THEN_ASK = ('prompt p: """Answer."""\nagent a:\n    instruction p\nflow main:\n'
                 '    $x = run agent a $input\n    $go = escalate to human "Ship " + $x + "?"\n    return $go\n')
SCRIPT = "agents:\n  a: [ready, again]\n"
# The agent itself asks (bench_peer.py's workload): the decision continues its call, a model turn.
AGENT_ASKS = TURN_THEN_DONE
AGENT_ASKS_SCRIPT = ("agents:\n  a:\n    - escalate: {reason: architecture_decision, question: 'Go on?', "
                     "options: [{id: go, label: Go}]}\n    - 'went on'\n")


class Tree:
    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path = name, path.resolve()
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # compiled once, as a user's
        self.env.update(PYTHONPATH=str(self.path), TERM="xterm-256color")

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "engine", *args]


def _children_cpu() -> float:
    """CPU seconds (user + system) of the children that ended so far: steadier than wall time on
    a loaded host, where a 2 s start can take 20 s of wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _workspace(folder: Path) -> None:
    for name, text in (("turn.sr", TURN_THEN_DONE), ("ask.sr", ASK_THEN_TURN), ("wait.sr", TURN_THEN_ASK)):
        (folder / name).write_text(text)
    for name in ("turn", "ask", "wait"):
        (folder / f"{name}.yaml").write_text(SCRIPT)
    (folder / "agentask.sr").write_text(AGENT_ASKS)
    (folder / "agentask.yaml").write_text(AGENT_ASKS_SCRIPT)
    (folder / "go.yaml").write_text("- responseType: option\n  selectedOption: go\n")


def _until_event(proc: subprocess.Popen, events: Path, started: float) -> float:
    """Seconds from `started` to the first agent_result in `events` (polled every 2 ms)."""
    while True:
        if events.is_file() and b'"agent_result"' in events.read_bytes():
            return time.perf_counter() - started
        if proc.poll() is not None:
            raise SystemExit(f"ended ({proc.returncode}) before its first turn: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.002)


def run_first_turn(tree: Tree, folder: Path, db: str) -> tuple[float, float, float]:
    """(launch -> first turn done, launch -> exit, the process's CPU seconds)."""
    events = folder / "run.jsonl"
    events.unlink(missing_ok=True)
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(tree.command("run", "turn.sr", "--input", "go", "--events", str(events), "--db", db),
                            cwd=folder, env=tree.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = _until_event(proc, events, started)
    proc.wait()
    return first, time.perf_counter() - started, _children_cpu() - cpu


def _quick(tree: Tree, folder: Path, *args: str, expect: int = 0) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(tree.command(*args), cwd=folder, env=tree.env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"{tree.name}: escalate {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return elapsed, done.stdout


def _waiting_run(tree: Tree, folder: Path, db: str, flow: str = "ask.sr") -> str:
    _quick(tree, folder, "run", flow, "--input", "v1", "--db", db, expect=4)
    listed = json.loads(_quick(tree, folder, "runs", "--db", db, "--format", "json")[1])
    return next(run["run_id"] for run in listed if run["pending"])


def _pending_id(tree: Tree, folder: Path, db: str, run_id: str) -> str:
    listed = json.loads(_quick(tree, folder, "runs", "--db", db, "--format", "json")[1])
    return next(run["pending"][0]["id"] for run in listed if run["run_id"] == run_id)


def answer_and_resume(tree: Tree, folder: Path, db: str, flow: str = "ask.sr") -> tuple[float, ...]:
    """(answer alone, runs alone, answer -> the next turn done, answer -> resume's exit; CPU
    seconds of runs, of answer, of answer + resume). `flow`: ask.sr, the flow asks, then an
    agent's turn; agentask.sr, the agent asks, its call goes on after the decision."""
    run_id = _waiting_run(tree, folder, db, flow)
    cpu = _children_cpu()
    listing, _ = _quick(tree, folder, "runs", "--db", db)
    runs_cpu = _children_cpu() - cpu
    events = folder / "resume.jsonl"
    events.unlink(missing_ok=True)
    asked = _pending_id(tree, folder, db, run_id)
    cpu = _children_cpu()
    started = time.perf_counter()
    if flow == "ask.sr":
        _quick(tree, folder, "answer", asked, "--text", "yes", "--db", db)
    else:
        _quick(tree, folder, "answer", asked, "--option", "go", "--db", db)
    answered = time.perf_counter() - started
    answer_cpu = _children_cpu() - cpu
    proc = subprocess.Popen(tree.command("resume", run_id, "--events", str(events), "--db", db), cwd=folder, env=tree.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    next_turn = _until_event(proc, events, started)
    proc.wait()
    return answered, listing, next_turn, time.perf_counter() - started, runs_cpu, answer_cpu, _children_cpu() - cpu


def resume_with_answers_file(tree: Tree, folder: Path, db: str) -> tuple[float, float]:
    """bench_peer's workload answered and continued in one launch, `resume RUN --answers A.yaml`
    (the contract's: the decision's `resolvedBy` is `answers_file`, not `human`): (launch -> the
    next turn done, its CPU seconds). Beside `answer` + `resume`: what the second launch costs."""
    run_id = _waiting_run(tree, folder, db, "agentask.sr")
    events = folder / "resume.jsonl"
    events.unlink(missing_ok=True)
    cpu = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(tree.command("resume", run_id, "--answers", "go.yaml", "--events", str(events), "--db", db),
                            cwd=folder, env=tree.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    next_turn = _until_event(proc, events, started)
    proc.wait()
    return next_turn, _children_cpu() - cpu


def _pick(values: tuple[float, ...], *at: int) -> list[float]:
    return [values[i] for i in at]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for {pid}")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


IDLE_WATCH = 3.0  # seconds a waiting process's CPU is watched


def run_wait_rss(tree: Tree, folder: Path, db: str) -> tuple[float, float]:
    """VmRSS (MiB) of `run --wait` waiting on a person after one agent turn (settled for 1 s),
    and the CPU it spends meanwhile (ms a second over IDLE_WATCH: its polls)."""
    proc = subprocess.Popen(tree.command("run", "wait.sr", "--input", "v1", "--wait", "--db", db), cwd=folder,
                            env=tree.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            if "waiting on a human" in line or "waits for a human" in line or "escalate answer" in line:
                break
        else:
            raise SystemExit(f"{tree.name}: run --wait ended ({proc.wait()}) without waiting")
        time.sleep(1.0)
        rss, cpu, started = _rss_mib(proc.pid), _cpu_seconds(proc.pid), time.monotonic()
        time.sleep(IDLE_WATCH)
        return rss, (_cpu_seconds(proc.pid) - cpu) * 1000 / (time.monotonic() - started)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()


def console_rss(tree: Tree, folder: Path, db: str, settle: float = 6.0) -> float:
    """VmRSS of the console on a pseudo-terminal, `settle` s after its first frame (its database
    open and the waiting runs listed)."""
    argv = tree.command("console", "ask.sr", "--db", db)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(folder)
        os.execve(argv[0], argv, tree.env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    try:
        seen, deadline = b"", time.perf_counter() + 60
        while b"Workflows" not in seen and time.perf_counter() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                seen = seen[-64:] + os.read(fd, 65536)
        end = time.perf_counter() + settle
        while time.perf_counter() < end:  # keep reading: a full terminal would block the app
            if select.select([fd], [], [], 0.2)[0]:
                os.read(fd, 65536)
        return _rss_mib(pid)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


WARM_UP = """
import json, time
import engine.runtime.engine as engine

def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")) / 1024

before, cpu = rss(), time.process_time()
engine.warm_up()
print(json.dumps([(time.process_time() - cpu) * 1000, rss() - before]))
"""


def warm_up_cost(tree: Tree, folder: Path) -> tuple[float, float]:
    """CPU (ms) of ADK's warm-up in a fresh process, and the RSS (MiB) it adds."""
    done = subprocess.run([sys.executable, "-c", WARM_UP], cwd=folder, env=tree.env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree.name}: warm-up: {done.stderr.strip()[-300:]}")
    cpu, rss = json.loads(done.stdout.splitlines()[-1])
    return cpu, rss


# `escalate ARGV` with the process's CPU (ms) noted at the ends of its start-up's phases, the
# collector's passes counted and timed; JSON on the last line of stderr.
PHASES = """
import atexit, gc, json, sys, threading, time
import engine.services as services
import engine.runtime.adk_setup as adk_setup
from engine.cli.main import script

noted, collector = {}, {"passes": 0, "ms": 0.0}
started = {}

def note(name):
    noted.setdefault(name, time.process_time() * 1000)

def count(phase, info):
    if phase == "start":
        started[threading.get_ident()] = time.thread_time()
    else:
        collector["passes"] += 1
        collector["ms"] += (time.thread_time() - started.pop(threading.get_ident(), time.thread_time())) * 1000

gc.callbacks.append(count)
open_services = services.open_services

async def timed_open(*args, **kwargs):
    note("CLI, rules, script")
    try:
        return await open_services(*args, **kwargs)
    finally:
        note("open_services")

services.open_services = timed_open
warm_up_on_thread = adk_setup._warm_up_on_thread

def timed_warm_up(*args):
    note("-> warm-up started")
    warm_up_on_thread(*args)
    note("warm-up")

adk_setup._warm_up_on_thread = timed_warm_up

@atexit.register
def report():
    note("-> exit")
    print(json.dumps({**noted, "collector passes": collector["passes"], "collector (ms)": collector["ms"]}), file=sys.stderr)

sys.argv[0] = "escalate"
script()
"""


def phases(tree: Tree, folder: Path, db: str) -> dict[str, float]:
    """A cold `run` of one scripted turn: the CPU (ms) of each phase of its start-up, and the
    collector's passes and CPU."""
    done = subprocess.run([sys.executable, "-c", PHASES, "run", "turn.sr", "--input", "go", "--db", db], cwd=folder,
                          env=tree.env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree.name}: phases: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    noted = json.loads(done.stderr.strip().splitlines()[-1])
    found, before = {}, 0.0
    for name in ("CLI, rules, script", "open_services", "-> warm-up started", "warm-up", "-> exit"):
        found[f"run phase: {name}: CPU (ms)"] = noted[name] - before
        before = noted[name]
    found["run: collector passes"] = noted["collector passes"]
    found["run: collector CPU (ms)"] = noted["collector (ms)"]
    return found


def import_ms(tree: Tree, folder: Path, *args: str, expect: int = 0) -> float:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "engine", *args], cwd=folder, env=tree.env,
                          capture_output=True, text=True)
    if proc.returncode != expect:
        raise SystemExit(f"{tree.name}: importtime {' '.join(args)}: exit {proc.returncode}")
    total = 0
    for line in proc.stderr.splitlines():
        found = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)\S+", line)
        if found and len(found.group(2)) == 1:  # a top-level import: its cumulative time counts once
            total += int(found.group(1))
    return total / 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    options = parser.parse_args()
    trees = [Tree(name, Path(path)) for name, _, path in (spec.partition("=") for spec in options.tree)] \
        or [Tree("this", Path(__file__).resolve().parents[2])]
    figures: dict[str, dict[str, list[float]]] = {tree.name: {} for tree in trees}

    def note(tree: Tree, name: str, value: float) -> None:
        figures[tree.name].setdefault(name, []).append(value)

    print(f"load average {os.getloadavg()[0]:.1f}; {options.rounds} rounds, trees interleaved: "
          + ", ".join(f"{t.name}={t.path}" for t in trees))
    with tempfile.TemporaryDirectory() as scratch:
        folders = {}
        for tree in trees:
            folder = Path(scratch) / tree.name
            folder.mkdir()
            _workspace(folder)
            folders[tree.name] = folder
            run_first_turn(tree, folder, f"sqlite:///{folder / 'warm.db'}")  # compiles the tree's modules once
        measures: list[tuple[str, Callable[[Tree, Path, str], None]]] = [
            ("run", lambda t, f, db: [note(t, n, v * 1000) for n, v in
                                      zip(("run: launch -> first turn done (ms)", "run: launch -> exit (ms)",
                                           "run, 1 turn: CPU (ms)"), run_first_turn(t, f, db))]),
            ("answer", lambda t, f, db: [note(t, n, v * 1000) for n, v in
                                         zip(("answer: launch -> exit (ms)", "runs: launch -> exit (ms)",
                                              "answer + resume: launch -> next turn done (ms)",
                                              "answer + resume: launch -> exit (ms)", "runs: CPU (ms)",
                                              "answer: CPU (ms)", "answer + resume: CPU (ms)"),
                                             answer_and_resume(t, f, db))]),
            ("agent asks", lambda t, f, db: [note(t, n, v * 1000) for n, v in
                                             zip(("agent asks: answer + resume: launch -> next turn done (ms)",
                                                  "agent asks: answer + resume: launch -> exit (ms)",
                                                  "agent asks: answer + resume: CPU (ms)"),
                                                 _pick(answer_and_resume(t, f, db, "agentask.sr"), 2, 3, 6))]),
            ("answers file", lambda t, f, db: [note(t, n, v * 1000) for n, v in
                                               zip(("agent asks: resume --answers: launch -> next turn done (ms)",
                                                    "agent asks: resume --answers: CPU (ms)"),
                                                   resume_with_answers_file(t, f, db))]),
            ("rss", lambda t, f, db: [note(t, n, v) for n, v in
                                      zip(("idle RSS, run --wait waiting after a turn (MiB)",
                                           "idle CPU, run --wait waiting after a turn (ms/s)"), run_wait_rss(t, f, db))]),
            ("warm-up", lambda t, f, db: [note(t, n, v) for n, v in
                                          zip(("ADK's warm-up: CPU (ms)", "ADK's warm-up: RSS added (MiB)"),
                                              warm_up_cost(t, f))]),
            ("console", lambda t, f, db: note(t, "idle RSS, console with the waiting runs listed (MiB)",
                                              console_rss(t, f, db))),
            ("phases", lambda t, f, db: [note(t, n, v) for n, v in phases(t, f, db).items()]),
        ]
        for round_ in range(options.rounds):
            for _, measure in measures:
                for tree in trees:
                    measure(tree, folders[tree.name], f"sqlite:///{folders[tree.name] / f'r{round_}.db'}")
        for tree in trees:  # import time per command (-X importtime), once per round
            folder = folders[tree.name]
            db = f"sqlite:///{folder / 'r0.db'}"
            for _ in range(min(options.rounds, 3)):
                note(tree, "imports: run, 1 turn (ms)", import_ms(tree, folder, "run", "turn.sr", "--db", db))
                note(tree, "imports: runs (ms)", import_ms(tree, folder, "runs", "--db", db))
                note(tree, "imports: check (ms)", import_ms(tree, folder, "check", "turn.sr"))
    names = list(figures[trees[0].name])
    width = max(len(n) for n in names)
    print(f"{'median (min)':{width}}  " + "  ".join(f"{t.name:>14}" for t in trees))
    for name in names:
        cells = [figures[t.name].get(name, []) for t in trees]
        print(f"{name:{width}}  " + "  ".join(f"{statistics.median(c):8.0f} ({min(c):.0f})".rjust(14) if c else " " * 14
                                           for c in cells))
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
