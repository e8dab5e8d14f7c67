"""Compiler speed: full pipeline (parse, analyze, generate, Python compile()) and `escalate check`.

Run: python tests/benchmarks/bench_compiler.py [--origin-python PY] [--quick]   (prints figures; no
assertions). With --origin-python (the python of a venv holding `streetrace==0.1.24`, Python 3.12,
outside the repository), the origin's own compiler runs side by side, in-process in that
interpreter, on the same files: its `compile_dsl(source, name, use_cache=False)` against our full
pipeline, and the ratio. The machine is shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine.lang import compiler
from engine.lang.parser import parse_source

HEAD = '''streetrace v1
model main = anthropic/claude-sonnet
schema Finding:
    file: string
    score: int
tool fs = builtin streetrace.fs
'''

BLOCK = '''
prompt p{i} using model "main": """Review ${{input_prompt}} and $current carefully, part {i}."""
    escalate if ~ "DRIFTING"

agent a{i}:
    instruction p{i}
    tools fs
    description "agent {i}"

flow f{i}:
    $current = $input
    $items = []
    loop max 3 do
        $current = run agent a{i} $current, on escalate return $current
        if $current ~ "done":
            log "finished ${{current}}"
        elif $current contains "retry":
            continue
        else:
            $items = $items + [$current]
    end
    for $x in filter $items where .score > 50 do
        parallel do
            $l = run agent a{i} with $x
            $r = call llm p{i} $x
        end
        push $l to $log
    end
    match $current
        when "a" -> return {{ status: "ok", n: len($items) }}
        else -> log "other"
    end
    return $current
'''
BLOCK_LINES = BLOCK.count("\n")


def program(lines: int) -> str:
    n = max(1, (lines - HEAD.count("\n")) // BLOCK_LINES)
    return HEAD + "".join(BLOCK.format(i=i) for i in range(n))


def full_pipeline(text: str, path: Path) -> float:
    return full_pipeline_times(text, path)[0]


def full_pipeline_times(text: str, path: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one full compile, caches emptied first."""
    compiler._parse_cache.clear()
    compiler._result_cache.clear()
    t, c = time.perf_counter(), time.process_time()
    r = compiler.compile_source(text, path)
    times = time.perf_counter() - t, time.process_time() - c
    assert r.ok, r.diagnostics[:3]
    return times


def timings_ms(text: str, runs: int) -> tuple[float, float, float]:
    """(median, min, idle-equivalent median) over `runs`: the min shows the cost with the least
    interference; each run is also scaled by a short calibration taken just before it (the
    machine is shared: its speed changes from one second to the next)."""
    path = Path("/tmp/bench.sr")
    runs_ms: list[float] = []
    scaled: list[float] = []
    for _ in range(runs):
        slowdown = _quick_calibration_ms() / 4.0  # 10^5 additions: about 4 ms on an idle core
        runs_ms.append(full_pipeline(text, path) * 1000)
        scaled.append(runs_ms[-1] / slowdown)
    return statistics.median(runs_ms), min(runs_ms), statistics.median(scaled)


def _quick_calibration_ms() -> float:
    t = time.perf_counter()
    x = 0
    for i in range(100_000):
        x += i
    return (time.perf_counter() - t) * 1000


def calibration_ms() -> float:
    """A fixed pure-Python workload (10^6 additions): compare machines and load levels."""
    best = 1e9
    for _ in range(3):
        t = time.perf_counter()
        x = 0
        for i in range(1_000_000):
            x += i
        best = min(best, time.perf_counter() - t)
    return best * 1000



# One block in the forms the origin (streetrace 0.1.24) accepts: the same files go to both compilers.
ORIGIN_BLOCK = '''
prompt refine{i} using model "main": """Improve this, part {i}: $current"""
    escalate if ~ "DRIFTING"

prompt judge{i}: """Is $current better than before? Part {i}."""

agent peer{i}:
    instruction refine{i}
    description "refines part {i}"

agent judge{i}:
    instruction judge{i}

flow part{i}:
    $current = initial user prompt
    $kept = []
    loop max 3 do
        $current = run agent peer{i} with $current, on escalate return $current
        $verdict = run agent judge{i} with $current, on escalate continue
        if $verdict ~ "done":
            return $current
        $kept = $kept + [$verdict]
        log "again"
    end
    for $item in $kept do
        log $item
    end
    return $current
'''
ORIGIN_HEAD = "streetrace v1\nmodel main = anthropic/claude-sonnet\n"


def origin_program(lines: int) -> str:
    n = max(1, (lines - 2) // ORIGIN_BLOCK.count("\n"))
    return ORIGIN_HEAD + "".join(ORIGIN_BLOCK.format(i=i) for i in range(n))


def long_flow(lines: int) -> str:
    """One flow of `lines` lines: assignments, branches, loops, agent runs, interpolated logs."""
    step = ('    $v{i} = run agent a with "part {i}"\n    if $v{i} contains "x":\n        log "saw ${{v{i}}}"\n'
            '    for $x in [$v{i}, {i}] do\n        $total = $total + 1\n    end\n')
    head = 'prompt p: """x"""\nagent a:\n    instruction p\nflow main:\n    $total = 0\n'
    return head + "".join(step.format(i=i) for i in range(max(1, lines // 6))) + "    return $total\n"


ORIGIN_RUNNER = r'''
import contextlib, io, json, statistics, sys, time
from streetrace.dsl.compiler import compile_dsl
files = json.loads(sys.argv[1])
out = {}
for name, path, runs in files:
    source = open(path, encoding="utf-8").read()
    walls, cpus = [], []
    for _ in range(runs):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            t, c = time.perf_counter(), time.process_time()
            compile_dsl(source, path.rsplit("/", 1)[-1], use_cache=False)  # it names a class after the file
            cpus.append(time.process_time() - c)
            walls.append(time.perf_counter() - t)
    out[name] = [statistics.median(walls), statistics.median(cpus)]
print(json.dumps(out))
'''


def origin_files(origin_python: str, folder: Path) -> list[tuple[str, Path]]:
    """The files both compilers get: the origin's own default agent (from its package), our
    origin-form corpus (tests/lang/origin_forms, which the origin accepts), generated files."""
    found = subprocess.run([origin_python, "-c", "import importlib.resources as r; "
                            "print(r.files('streetrace.agents') / 'streetrace.sr')"],
                           capture_output=True, text=True, check=True).stdout.strip()
    files = [("origin streetrace.sr", Path(found))]
    forms = Path(__file__).resolve().parents[1] / "lang" / "origin_forms"
    files += [(f"origin_forms/{p.name}", p) for p in sorted(forms.glob("*.sr"))]
    for lines in (60, 880):
        p = folder / f"generated_{lines}.sr"
        p.write_text(origin_program(lines))
        files.append((f"generated {origin_program(lines).count(chr(10))} lines", p))
    return files


def compare_with_origin(origin_python: str, runs: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        files = origin_files(origin_python, Path(d))
        counts = {n: runs if p.stat().st_size < 20_000 else max(3, runs // 3) for n, p in files}
        done = subprocess.run([origin_python, "-c", ORIGIN_RUNNER, json.dumps([(n, str(p), counts[n]) for n, p in files])],
                              capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            print("origin compiler failed:", done.stderr.strip().splitlines()[-3:])
            return
        theirs = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"side by side, full compile, same files, in-process ({runs} runs each, 3 for large files; "
              f"medians, wall / CPU; load {_load()}). The ratio is of CPU times, which a loaded machine "
              "disturbs least:")
        ratios = []
        for name, path in files:
            text = path.read_text(encoding="utf-8")
            ours = [full_pipeline_times(text, Path(d) / "same.sr") for _ in range(counts[name])]
            wall, cpu = statistics.median(w for w, _ in ours), statistics.median(c for _, c in ours)
            o_wall, o_cpu = theirs[name]
            ratios.append(o_cpu / cpu)
            print(f"  {name:34s} {text.count(chr(10)):4d} lines: origin {o_wall * 1000:8.1f} / {o_cpu * 1000:8.1f} ms, "
                  f"ours {wall * 1000:6.2f} / {cpu * 1000:6.2f} ms: ours {ratios[-1]:6.1f}x faster (wall {o_wall / wall:.1f}x)")
        print(f"  ratio over the files: min {min(ratios):.1f}x, median {statistics.median(ratios):.1f}x")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def check_scaling(sizes: tuple[int, ...]) -> None:
    """`escalate check` as a user runs it (a fresh process), per line, for two file shapes."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as d:
        for shape, make in (("many flows", program), ("one long flow", long_flow)):
            print(f"`escalate check`, {shape}: wall of the command incl. start-up, best and median of 3; and per line, the "
                  f"in-process CPU time of what it runs (best of 3); load {_load()}:")
            for size in sizes:
                path = Path(d) / f"{size}.sr"
                text = make(size)
                path.write_text(text)
                walls = []
                for _ in range(3):
                    t = time.perf_counter()
                    r = subprocess.run([sys.executable, "-m", "engine", "check", str(path)], capture_output=True, env=env)
                    walls.append(time.perf_counter() - t)
                    assert r.returncode == 0, r.stdout[-500:]
                cpus = []
                for _ in range(3):
                    compiler._parse_cache.clear()
                    compiler._result_cache.clear()
                    c = time.process_time()
                    compiler.compile_file(path, check_only=True)
                    cpus.append(time.process_time() - c)
                lines = text.count(chr(10))
                print(f"  {lines:7d} lines: {min(walls):6.2f} s wall (median {statistics.median(walls):.2f} s); {min(cpus):6.2f} s CPU in-process, "
                      f"{min(cpus) / lines * 1e6:5.1f} us/line")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--origin-python", help="python of a venv with streetrace==0.1.24 (Python 3.12)")
    parser.add_argument("--quick", action="store_true", help="only the side-by-side and check scaling figures")
    args = parser.parse_args()
    print(f"load average now: {_load()} (2 cores, shared machine)")
    if args.origin_python:
        compare_with_origin(args.origin_python, 5 if args.quick else 11)
    check_scaling((1_000, 10_000, 100_000))
    if args.quick:
        return
    print(f"calibration: 10^6 Python additions take {calibration_ms():.0f} ms on this machine now "
          f"(about 40 ms on an idle modern core)")
    parse_source(program(57), 'warm.sr')  # table loading is start-up cost, measured by the check timing below
    for size in (57, 880):
        text = program(size)
        med, low, idle = timings_ms(text, 21)
        print(f"full pipeline, {text.count(chr(10))}-line file: median {med:.1f} ms, min {low:.1f} ms (21 runs); "
              f"idle-core equivalent median {idle:.1f} ms")
    print("linear growth (median, min, idle-core equivalent median):")
    for size in (1000, 5000, 20000):
        text = program(size)
        med, low, idle = timings_ms(text, 5 if size < 20000 else 3)
        lines = text.count(chr(10))
        print(f"  {lines:6d} lines: {med:8.1f} ms, {low:8.1f} ms, {idle:8.1f} ms  ({low / lines * 1000:.1f} us/line at the min)")
    with tempfile.TemporaryDirectory() as d:
        small = Path(d) / "small.sr"
        small.write_text(program(57))
        walls = []
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: with .pyc
        for _ in range(8):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "engine", "check", str(small)], capture_output=True, check=True, env=env)
            walls.append(time.perf_counter() - t)
        walls = walls[1:]  # the first run may write .pyc files
        print(f"`escalate check` small file, wall incl. start-up: median {statistics.median(walls) * 1000:.0f} ms "
              f"(min {min(walls) * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
