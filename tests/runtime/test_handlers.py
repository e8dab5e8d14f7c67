"""Handlers from .sr source to a real run: `retry step` in each kind of handler, and agent calls
made inside handlers (which do not run the handlers again)."""

from __future__ import annotations

import pytest

from tests.lang.helpers import codes
from tests.runtime.conftest import run_sr

WRITER = '''tool fs = builtin streetrace.fs
prompt p: """Do the work."""
agent a:
    instruction p
    tools fs
{handler}
flow main:
    $r = run agent a "go"
    return $r
'''


# (handler, script, what the run returns): `retry step` in each kind of agent handler.
RETRY_STEP = {
    "tool-call: the call is refused, the agent sees why": (
        '    on tool-call do\n        if $tool == "write_file":\n            retry step "Denied: ${$tool} is not allowed"\n    end',
        'agents:\n  a:\n    - {tool: write_file, args: {path: o.txt, content: x}}\n'
        '    - {text: "understood, no writing", when: "denied: write_file"}\n    - "fallback"\n',
        "understood, no writing"),
    "tool-result: the result is replaced": (
        '    after tool-result do\n        retry step "The listing is hidden; answer without it"\n    end',
        'agents:\n  a:\n    - {tool: list_directory, args: {path: "."}}\n'
        '    - {text: "answered blind", when: "listing is hidden"}\n    - "fallback"\n',
        "answered blind"),
    "output: the agent is asked again": (
        '    on output do\n        if $output contains "draft":\n            retry step "Not a draft: the final text"\n    end',
        'agents:\n  a:\n    - "a draft"\n    - {text: "the final text", when: "Not a draft"}\n',
        "the final text"),
    "input: the agent gets that input": (
        '    on input do\n        retry step "rephrased: ${$input}"\n    end',
        'agents:\n  a:\n    - {text: "saw it", when: "rephrased: go"}\n    - "fallback"\n',
        "saw it"),
}


@pytest.mark.parametrize("case", list(RETRY_STEP))
def test_retry_step_in_a_handler_does_the_step_again(capsys, tmp_path, case: str) -> None:
    handler, script, expected = RETRY_STEP[case]
    code, out, _ = run_sr(capsys, tmp_path, WRITER.format(handler=handler), script)
    assert (code, out) == (0, expected + "\n")
    assert not (tmp_path / "ws" / "o.txt").exists()  # a refused write never ran


def test_an_agent_run_inside_a_handler_does_not_run_the_handlers_again(capsys, tmp_path) -> None:
    source = '''prompt p: """x"""
agent a:
    instruction p
agent checker:
    instruction p
after output do
    $verdict = run agent checker "check this"
    warn "checked: ${$verdict}"
end
flow main:
    $r = run agent a "go"
    return $r
'''
    script = 'agents:\n  a: ["the answer"]\n  checker: ["fine", "fine again", "and again"]\n'
    code, out, events = run_sr(capsys, tmp_path, source, script)
    assert (code, out) == (0, "the answer\n")
    assert [e["agent"] for e in events if e["type"] == "agent_call"] == ["a", "checker"]


def test_retry_step_in_a_start_handler_is_e0009() -> None:
    assert codes('on start do\n    retry step "again"\nend\nflow main:\n    return 1\n') == ["E0009"]
