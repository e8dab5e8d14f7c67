"""What the flow parser holds for the life of a process (docs/startup.md, what a waiting
`run --wait` holds): one action table shared by every start symbol, and not the JSON tables it
was built from (1.4 MiB of lists kept by every process that compiled a flow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import gc, json
from engine.lang.fastparse import load_parser
from engine.lang.parser import parse_expression, parse_source
assert parse_source('flow main:\n    return "${x}"\n', "probe.sr").tree is not None
parse_expression("$a + 1", "probe.sr", 1, 1)
start, expr = load_parser("start"), load_parser("expr")
kept = [o for o in gc.get_objects() if isinstance(o, dict) and "grammar_sha256" in o]
print(json.dumps({"shared": start.actions is expr.actions, "starts": [start.start_state != expr.start_state],
                  "tables_kept": len(kept)}))
"""


def test_the_parser_keeps_one_action_table_and_not_its_json_tables(tmp_path: Path) -> None:
    # A fresh interpreter (the parser is built once per process), out of the source tree: the
    # tree on PYTHONPATH is the one measured.
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found == {"shared": True, "starts": [True], "tables_kept": 0}
