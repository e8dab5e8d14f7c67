"""What the formats' pydantic models cost (issue 16, "Files people edit get a schema").

Prints: importing pydantic and the models (a fresh interpreter each time), generating each JSON
Schema, and reading the shipped rules and the demo scripts with and without the schema pass
(median of many). Asserts nothing; the host is shared, so the load average is printed too.

Run: PYTHONPATH=. python tests/benchmarks/bench_schema.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engine.demo import demo_dir
from engine.runtime.script import _parse
from rules import loader
from rules.schema import SCHEMAS, RulesFile, ScriptFile, json_schema, validate_document
from rules.yamlnodes import Reader

ROUNDS = 200


def _median_ms(fn, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _import_ms() -> float:
    code = "import time; t = time.perf_counter(); import rules.schema; print((time.perf_counter() - t) * 1000)"
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(7)]
    return statistics.median(runs)


def main() -> None:
    print(f"load average: {os.getloadavg()}")
    print(f"import rules.schema (pydantic and the models), fresh interpreter: median {_import_ms():.1f} ms")
    for kind in SCHEMAS:
        print(f"JSON Schema of {kind}: {_median_ms(lambda: json_schema(kind), 20):.2f} ms, {len(json_schema(kind))} bytes")
    rules_text = (Path(loader.__file__).parent / "default.yaml").read_text()
    hand = _median_ms(lambda: loader._RulesParser(Reader(rules_text, "default.yaml")).parse(loader.Rules()))
    full = _median_ms(lambda: loader.parse_rules(rules_text, "default.yaml", base=loader.Rules()))
    only = _median_ms(lambda: validate_document(RulesFile, Reader(rules_text, "default.yaml"), what="the rules file"))
    print(f"rules/default.yaml: loader's checks {hand:.3f} ms, with the schema pass {full:.3f} ms "
          f"(schema pass alone, YAML composed again: {only:.3f} ms)")
    for path in sorted(demo_dir().glob("*.yaml")):
        if path.name == "rules.yaml":
            continue
        text = path.read_text()
        hand = _median_ms(lambda: _parse(Reader(text, path.name), path.name))
        schema = _median_ms(lambda: validate_document(ScriptFile, Reader(text, path.name), what="the script"))
        print(f"script {path.name}: loader's checks {hand:.3f} ms, schema pass {schema:.3f} ms")


if __name__ == "__main__":
    main()
