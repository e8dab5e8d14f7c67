"""Figures for outside agents' hooks (issue 24), printed, never asserted:

1. `escalate hook claude` decided by a rule: wall time per call, process start included, and its
   CPU time (user + system); with `--tree NAME=DIR` (repeatable) each source tree's hook in turn,
   interleaved with a bare `python -c pass` (the floor), so that the host's load hits them alike.
   In three projects: rules in its `.escalate/rules.yaml`; no `.escalate/` and `--rules FILE`
   (denied by the file's rule); no `.escalate/` and the shipped rules (no rule matches: no
   opinion, the rules' answer all the same). The user's cache folder is a temporary one.
2. A hook's request raised -> listed by a console's feed (a process hearing everything, as the
   console does): from the row's raise time to the listing.
3. Answered -> the hook prints its decision (the agent's tool then runs): from the decision's
   write to the hook's output.
4. 50 Claude sessions waiting at once on one database, each answered (approve or deny, at
   random): lost, misrouted and doubled decisions counted.

    PYTHONPATH=. python tests/benchmarks/bench_hook.py [--calls 30] [--sessions 50]
    PYTHONPATH=. python tests/benchmarks/bench_hook.py --tree old=/tmp/int0 --tree new=. --only-rule
    PYTHONPATH=. python tests/benchmarks/bench_hook.py --tree old=/tmp/int0 --tree new=. --only-rule --instructions

`--instructions`: figure 1 also as the instructions one call executes in user space (valgrind's
callgrind, process start included), which a loaded host does not change as it changes times.

`--installed`: every process (the hooks and `python -c pass`) runs in a virtual environment made
for the run, which sees this one's packages as plain folders on its path, as a `pip install
escalate` (or pipx) has them, without the import hook an editable install (`pip install -e`)
adds to every start of its interpreter (~50 M instructions, ~12 ms here).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RULES = """escalationRules:
  global:
    - {pattern: "rm -rf", action: deny}
    - {pattern: "touch", action: ask_user, timeout: 600}
"""


def call(root: Path, command: str, session: str, tool_use_id: str) -> bytes:
    return json.dumps({"session_id": session, "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "tool_use_id": tool_use_id,
                       "permission_mode": "default", "transcript_path": "/dev/null"}).encode()


CACHE = Path(tempfile.mkdtemp(prefix="bench-hook-cache-"))  # the user's cache folders (rules/snapshot.py)
PYTHON = sys.executable  # `--installed`: the interpreter of a venv without the editable install's hook


def installed_python(folder: Path) -> str:
    """A venv's interpreter that finds this one's packages as an installed escalate does: its
    site-packages named in a .pth file (whose own .pth files, the editable finder's, then never run)."""
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    packages = next((folder / "lib").glob("python3*/site-packages"))
    (packages / "escalate-bench.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    return str(folder / "bin" / "python")


def env(tree: str | None = None) -> dict[str, str]:
    # Bytecode cached, as an installed escalate has it (pip compiles at install): a
    # PYTHONDONTWRITEBYTECODE in the environment would compile every module at every call.
    out = {k: v for k, v in os.environ.items() if k not in ("ESCALATE_DB", "PYTHONDONTWRITEBYTECODE")}
    # Each tree its own cache folder: two trees' snapshots name different loader sources, and
    # sharing one would make each tree's call replace the other's (a miss at every call).
    out["XDG_CACHE_HOME"] = str(CACHE / hashlib.sha256(str(tree).encode()).hexdigest()[:12])
    if tree is not None:
        out["PYTHONPATH"] = tree
    return out


def hook(root: Path, stdin: bytes, tree: str | None = None, argv: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([PYTHON, "-m", "engine", "hook", "claude", *argv], cwd=root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(tree))
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    return proc


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def show(name: str, values: list[float]) -> None:
    ms = [v * 1000 for v in values]
    print(f"{name}: n={len(ms)} median {sorted(ms)[len(ms) // 2]:.0f} ms, p95 {p95(ms):.0f} ms, max {max(ms):.0f} ms")


def by_rule(title: str, root: Path, calls: int, trees: dict[str, str | None], argv: tuple[str, ...] = (),
            expect: bytes = b'"deny"', instructions: bool = False) -> None:
    """Each tree's hook and the floor, one call of each a round (their order varies); the
    first call of each tree (the rules read and kept) is not counted."""
    walls: dict[str, list[float]] = {name: [] for name in [*trees, "python -c pass"]}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    roots = {name: copy(root, name) for name in trees}  # each tree its own project (its .escalate/ snapshot)
    for name, tree in trees.items():
        hook(roots[name], call(roots[name], "rm -rf build", "rule", "warm"), tree, argv).wait()
    load = os.getloadavg()[0]
    rng = random.Random(1)
    for i in range(calls):
        for name in rng.sample(list(walls), len(walls)):
            start = time.perf_counter()
            if name == "python -c pass":
                proc = subprocess.Popen([PYTHON, "-c", "pass"])
                out = expect
            else:
                proc = hook(roots[name], call(roots[name], "rm -rf build", "rule", f"r{i}"), trees[name], argv)
                out = proc.stdout.read() if proc.stdout else b""
            _, status, usage = os.wait4(proc.pid, 0)
            walls[name].append(time.perf_counter() - start)
            cpus[name].append(usage.ru_utime + usage.ru_stime)
            assert status == 0 and (expect in out if expect else out == b""), \
                (name, out, proc.stderr.read() if proc.stderr else b"")
    print(f"1. hook decided by a rule (process start included), {title}, {calls} rounds, "
          f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    for name in walls:
        show(f"   {name}: wall", walls[name])
        show(f"   {name}: CPU", cpus[name])
    if instructions:
        for name, tree in trees.items():
            here = roots[name]
            print(f"   {name}: {counted(here, call(here, 'rm -rf build', 'rule', 'ir'), tree, argv) / 1e6:.0f} M instructions")
        print(f"   python -c pass: {counted(root, b'', None, (), floor=True) / 1e6:.0f} M instructions")


def copy(root: Path, name: str) -> Path:
    """A copy of the project `root` for tree `name` (made once)."""
    import shutil

    here = root.parent / f"{root.name}-{name}"
    if not here.exists():
        shutil.copytree(root, here)
    return here


def counted(root: Path, stdin: bytes, tree: str | None, argv: tuple[str, ...], *, floor: bool = False) -> int:
    """The instructions one process executes in user space (valgrind's callgrind)."""
    import re

    command = [PYTHON, "-c", "pass"] if floor else [PYTHON, "-m", "engine", "hook", "claude", *argv]
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command], cwd=root,
                          input=stdin, capture_output=True, env=env(tree), timeout=600)
    found = re.search(rb"Collected : (\d+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1))


async def raised_and_answered(root: Path, rounds: int) -> None:
    from engine.durable.decisions import DecisionStore, decision_to_json, pending_from_json, who
    from engine.escalation.broker import RAISED
    from engine.kernel.model import Audit, Decision, ResolvedBy, Response, ResponseType, escalation_digest
    from engine.services import open_decisions

    console = await open_decisions(f"sqlite:///{root / '.escalate' / 'escalate.db'}", identity="bench console")
    assert console.feed is not None and console.db is not None
    console.feed.start(everything=True)  # as a console: every escalation raised anywhere is listed
    listed: dict[str, float] = {}
    console.broker.subscribe(lambda e: listed.setdefault(e.pending.escalation.id, time.time()) if e.kind == RAISED else None)
    store = DecisionStore(console.db)
    to_list, to_run = [], []
    for i in range(rounds):
        proc = hook(root, call(root, f"touch f{i}", "answer", f"a{i}"))
        while True:
            rows = console.db.pending_escalations()
            if rows and rows[0]["id"] in listed:
                break
            await asyncio.sleep(0.005)
        row = rows[0]
        to_list.append(listed[row["id"]] - row["created"])
        pending = pending_from_json(row["payload"])
        decision = Decision(row["id"], Response(ResponseType.OPTION, selected_option="approve"), ResolvedBy.HUMAN,
                            time.time(), audit=Audit(via="bench"), decided_by=who("bench"),
                            digest=escalation_digest(pending))
        start = time.perf_counter()
        store.decide(decision)
        out = await asyncio.to_thread(proc.stdout.read) if proc.stdout else b""
        to_run.append(time.perf_counter() - start)
        proc.wait()
        assert b'"allow"' in out, (out, decision_to_json(decision))
    console.close()
    show("2. raised -> listed in an open console's feed", to_list)
    show("3. answered -> the hook prints allow (the tool runs)", to_run)


def many(root: Path, sessions: int) -> None:
    from engine.services import open_database

    rng = random.Random(24)
    procs = {f"s{i}": hook(root, call(root, f"touch many{i}", f"s{i}", "t1")) for i in range(sessions)}
    db = open_database(f"sqlite:///{root / '.escalate' / 'escalate.db'}", existing=True)
    deadline = time.monotonic() + 600
    while True:
        pending = [r for r in db.pending_escalations() if "many" in r["payload"]["escalation"]["context"]]
        if len(pending) == sessions or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    print(f"4. {len(pending)} of {sessions} sessions waiting at once")
    wanted: dict[str, str] = {}
    for row in pending:
        session_cmd = row["payload"]["extra"]["args"]["command"]
        flag = rng.choice(["--approve", "--deny"])
        wanted[session_cmd] = "allow" if flag == "--approve" else "deny"
        subprocess.run([sys.executable, "-m", "engine", "answer", row["id"], flag, "--db", db.url], env=env(),
                       capture_output=True, check=True)
    lost = misrouted = 0
    for name, proc in procs.items():
        out = proc.stdout.read() if proc.stdout else b""
        proc.wait()
        if not out:
            lost += 1
            continue
        got = json.loads(out)["hookSpecificOutput"]["permissionDecision"]
        index = name[1:]
        if wanted.get(f"touch many{index}") != got:
            misrouted += 1
    rows = [r for r in db.past_escalations() if "many" in r["payload"]["escalation"]["context"]]
    ids = [r["id"] for r in rows]
    doubled = len(ids) - len(set(ids)) + sum(1 for r in rows if r["status"] != "decided")
    print(f"   lost {lost}, misrouted {misrouted}, decided twice or not at all {doubled} "
          f"({len(rows)} escalations decided, one per session)")
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=DIR",
                        help="figure 1 for this source tree (repeatable; default: the one imported)")
    parser.add_argument("--only-rule", action="store_true", help="figure 1 only")
    parser.add_argument("--instructions", action="store_true", help="figure 1 also counted in instructions (valgrind)")
    parser.add_argument("--installed", action="store_true",
                        help="figure 1 in a venv that has escalate as installed, not editable (no import hook at start)")
    args = parser.parse_args()
    trees: dict[str, str | None] = dict(t.split("=", 1) for t in args.tree) or {"hook": None}
    trees = {name: str(Path(tree).resolve()) if tree else None for name, tree in trees.items()}
    with tempfile.TemporaryDirectory() as folder:
        if args.installed:
            global PYTHON
            PYTHON = installed_python(Path(folder) / "venv")
        print(f"interpreter: {PYTHON}")
        root = Path(folder) / "project"
        (root / ".escalate").mkdir(parents=True)
        (root / ".escalate" / "rules.yaml").write_text(RULES)
        counts = args.instructions
        by_rule("the project's .escalate/rules.yaml", root, args.calls, trees, instructions=counts)
        bare = Path(folder) / "bare"  # a project with no .escalate/
        bare.mkdir()
        (Path(folder) / "mine.yaml").write_text(RULES)
        by_rule("no .escalate/, --rules FILE", bare, args.calls, trees, ("--rules", str(Path(folder) / "mine.yaml")),
                instructions=counts)
        by_rule("no .escalate/, the shipped rules (no rule matches: no opinion)", bare, args.calls, trees, expect=b"",
                instructions=counts)
        assert not (bare / ".escalate").exists()
        if args.only_rule:
            return
        asyncio.run(raised_and_answered(root, args.calls))
        many(root, args.sessions)


if __name__ == "__main__":
    main()
