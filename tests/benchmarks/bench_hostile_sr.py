"""Hostile `.sr` programs at growing sizes: each doubling should about double the time (ratio ~2;
a quadratic step shows ~4). tests/lang/test_large_programs.py holds the same shapes as tests.

Run: python tests/benchmarks/bench_hostile_sr.py [SHAPE ...]   (prints figures; no assertions)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from engine.lang.compiler import compile_source

FLOW = "flow main:\n    "
SHAPES = {
    "interpolations": lambda n: FLOW + "$x = 1\n    log \"" + "${x}" * n + "\"\n",
    "prompt body lines": lambda n: "prompt p:\n" + "    x ${y}\n" * (n // 2) + "flow main:\n    $y = 1\n",
    "assignments": lambda n: FLOW + "\n    ".join(f"$v{i} = 1" for i in range(n // 4)) + "\n",
    "flow chain": lambda n: "".join(f"flow f{i}:\n    return run f{i + 1}\n" for i in range(n // 20)) + "flow x:\n    return 1\n",
    "typos": lambda n: FLOW + "".join(f"$var_{i} = 1\n    " for i in range(n // 10)) + "".join(f"log $vaar_{i}\n    " for i in range(n // 10)),
    "agent chain, cycles": lambda n: "prompt p: 'x'\n" + "".join(f"agent a{i}:\n    instruction p\n    delegate a{i + 1}\n" for i in range(n // 40))
    + f"agent a{n // 40}:\n    instruction p\n    use " + ", ".join(f"a{i}" for i in range(n // 40)) + "\n",
    "match cases": lambda n: FLOW + "match $input\n" + "".join(f'        when "{i}" -> log {i}\n' for i in range(n // 100)) + "    end\n",
    "unterminated strings": lambda n: FLOW + 'log "' + "${" * n,
}


def main() -> None:
    names = sys.argv[1:] or list(SHAPES)
    sizes = (100_000, 200_000, 400_000)
    print(f"{'shape':22s} " + " ".join(f"{s // 1000:>6d}k" for s in sizes) + "   ratio  result")
    for name in names:
        times = []
        for n in sizes:
            text = SHAPES[name](n)
            start = time.perf_counter()
            r = compile_source(text, Path("/tmp/escalate-bench/hostile.sr"))
            times.append(time.perf_counter() - start)
        first = r.diagnostics[0] if r.diagnostics else None
        result = f"{first.code} ({len(r.diagnostics)})" if first else "ok"
        print(f"{name:22s} " + " ".join(f"{t:6.2f}s" for t in times) + f"  {times[-1] / max(times[-2], 1e-6):5.1f}  {result}")


if __name__ == "__main__":
    main()
