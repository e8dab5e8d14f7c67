"""Variables are flat per run (language.md, meaning 6), from .sr source to a real run."""

from __future__ import annotations

from tests.runtime.conftest import run_sr

SOURCE = '''prompt p: """x"""
agent a:
    instruction p
    produces found
on start do
    $greeting = "hi"
end
flow leaf:
    $set_by_leaf = "leaf was here"
    return [$greeting, $shared, $found, $input]
flow main:
    $shared = 1
    run agent a "go"
    $got = run leaf with "leaf input"
    return [$got, $set_by_leaf, $input]
'''


def test_flows_and_start_handlers_share_the_runs_variables_and_each_flow_has_its_own_input(capsys, tmp_path) -> None:
    import json

    code, out, _ = run_sr(capsys, tmp_path, SOURCE, "agents:\n  a: ['the find']\n")
    assert code == 0
    assert json.loads(out) == [["hi", 1, "the find", "leaf input"], "leaf was here", ""]
