"""`escalate run` per the contract: stdout only the result, exit codes, --events JSONL, and one
clear line (never a traceback) for every bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import main

DATA = Path(__file__).parent / "data"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """`escalate run` in this process; stderr without the `run ID` line every run prints first
    (and the `models:` line after it, for a workflow with agents)."""
    code = main(["run", *argv])
    out, err = capsys.readouterr()
    assert RUN_LINE.match(err) or code == 2, err
    return code, out, RUN_LINE.sub("", err, count=1)


RUN_LINE = re.compile(r"^run r[0-9a-f]{12}\n(models: [^\n]*\n)?")


def test_resolver_returns_previous_value_on_normalized_drift(capsys, tmp_path) -> None:
    events = tmp_path / "e.jsonl"
    code, out, err = run(
        capsys, str(DATA / "resolver.sr"), "--script", str(DATA / "resolver.yaml"), "--input", "draft zero",
        "--events", str(events),
    )
    assert (code, out) == (0, "draft two\n"), err
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert {"type", "time"} <= set(lines[0])
    [esc] = [e for e in lines if e["type"] == "escalation"]
    assert esc["agent_name"] == "peer1" and esc["condition_op"] == "~" and esc["condition_value"] == "DRIFTING"
    assert lines[-1] == {"type": "flow_result", "time": lines[-1]["time"], "result": "draft two"}


def test_continue_in_for_and_loop(capsys) -> None:
    code, out, err = run(capsys, str(DATA / "loops.sr"), "--script", str(DATA / "loops.yaml"))
    assert code == 0, err
    assert json.loads(out) == ["ok a", "ok c", "ok loop 2", "ok loop 3"]


def test_abort_exits_3(capsys) -> None:
    script = DATA / "resolver.yaml"  # any script: guard answers from its own list below
    code, out, err = run(capsys, str(DATA / "abort.sr"), "--script", str(_script(script.parent, "guard", "STOP")))
    assert (code, out) == (3, "")
    assert "aborted" in err


def _script(folder: Path, agent: str, *replies: str) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "s.yaml"
    path.write_text(json.dumps({"agents": {agent: list(replies)}}))
    return path


def test_answers_file_option_reaches_the_agent(capsys, tmp_path) -> None:
    answers = tmp_path / "a.yaml"
    answers.write_text("- {responseType: option, selectedOption: opt2}\n")
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(DATA / "decide.yaml"), "--answers", str(answers))
    assert (code, json.loads(out)) == (0, {"answer": "Keeping sessions"}), err


def test_waiting_on_a_human_exits_4(capsys) -> None:
    # architecture_decision waits for a human by default; headless with no answers: exit 4.
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(DATA / "decide.yaml"))
    assert (code, out) == (4, "")
    assert "waiting on a human" in err and "Use JWT instead of sessions?" in err


def test_timeout_default_applies_headless(capsys, tmp_path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text("escalationRules:\n  defaults:\n    architecture_decision: {timeout: 60, onTimeout: 'option:opt1'}\n")
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(DATA / "decide.yaml"), "--rules", str(rules))
    assert (code, json.loads(out)) == (0, {"answer": "Switching to JWT"}), err


def test_stop_default_exits_3(capsys, tmp_path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text("escalationRules:\n  defaults:\n    architecture_decision: {timeout: 60, onTimeout: stop}\n")
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(DATA / "decide.yaml"), "--rules", str(rules))
    assert (code, out) == (3, ""), err


def test_out_of_replies_exits_1_naming_the_agent(capsys, tmp_path) -> None:
    empty = tmp_path / "s.yaml"
    empty.write_text("agents: {}\n")
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(empty))
    assert (code, out) == (1, "")
    assert "'architect'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("option", "content", "expected"),
    [
        ("--script", "agents:\n  a: 5\n", "s.yaml:2:6: "),
        ("--answers", "- {responseType: nope}\n", "s.yaml:1:"),
        ("--rules", "escalationRules:\n  global: 3\n", "s.yaml:2:"),
    ],
)
def test_bad_input_files_exit_2_with_position(capsys, tmp_path, option, content, expected) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text(content)
    code, out, err = run(capsys, str(DATA / "decide.sr"), option, str(bad))
    assert (code, out) == (2, "")
    assert expected in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_text_arguments_that_are_not_utf8_are_read_with_replacement_characters(capsys, tmp_path) -> None:
    # What the OS gives Python for `--input $'ab\xffcd'`: a lone surrogate nothing can encode.
    events, answers = tmp_path / "e.jsonl", tmp_path / "a.yaml"
    answers.write_text("- {responseType: option, selectedOption: opt2}\n")
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(DATA / "decide.yaml"), "--input", "ab\udcffcd",
                         "--task", "t\udcff", "--events", str(events), "--answers", str(answers))
    assert "Traceback" not in err and code == 0, err
    text = events.read_text(encoding="utf-8")
    assert '"input": "ab\ufffdcd"' in text and '"taskId": "t\ufffd"' in text


def test_missing_workflow_and_compile_error_exit_2(capsys, tmp_path) -> None:
    code, out, err = run(capsys, str(tmp_path / "nope.sr"))
    assert (code, out) == (2, "") and "nope.sr" in err
    code, out, err = run(capsys, str(tmp_path))
    assert (code, out) == (2, "") and "it is a directory" in err
    broken = tmp_path / "broken.sr"
    broken.write_text("flow main:\n    $x = run agent ghost\n")
    code, out, err = run(capsys, str(broken))
    assert (code, out) == (2, "")
    assert "broken.sr:2:" in err and "E0001" in err


def test_sigterm_cancels_the_run_and_its_commands(tmp_path) -> None:
    import signal
    import time

    (tmp_path / "w.sr").write_text('tool sh = builtin streetrace.cli\nprompt p: """x"""\nagent a:\n    instruction p\n'
                                   '    tools sh\nflow main:\n    return run agent a "go"\n')
    (tmp_path / "s.yaml").write_text('agents:\n  a:\n    - {tool: run_command, args: {command: "sleep 31.41; echo x"}}\n')
    (tmp_path / "e.jsonl").touch()
    proc = subprocess.Popen([sys.executable, "-m", "engine", "run", str(tmp_path / "w.sr"), "--script", str(tmp_path / "s.yaml"),
                             "--events", str(tmp_path / "e.jsonl")], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while "tool_call" not in (tmp_path / "e.jsonl").read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)  # the command is running
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (143, "") and "stopped by SIGTERM" in err and "Traceback" not in err
    assert subprocess.run(["pgrep", "-f", "sleep 31.41"], capture_output=True).returncode == 1


def test_task_defaults_to_file_stem_and_selects_overrides(capsys, tmp_path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text("escalationRules:\n  taskOverrides:\n    decide:\n      rules: [{pattern: 'JWT', action: allow}]\n")
    script = _script(tmp_path, "architect", '{"escalation": true, "reason": "other", "question": "JWT?"}', "decided myself")
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(script), "--rules", str(rules))
    assert (code, json.loads(out)) == (0, {"answer": "decided myself"}), err
    # Another task name: the override does not apply; the question waits for a human: exit 4.
    code, out, err = run(capsys, str(DATA / "decide.sr"), "--script", str(script), "--rules", str(rules), "--task", "x")
    assert (code, out) == (4, "")


def test_real_command_no_traceback_and_stdout_clean(tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(DATA / "resolver.sr"), "--script", str(DATA / "resolver.yaml"), "--input", "x"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert (proc.returncode, proc.stdout) == (0, "draft two\n"), proc.stderr
    assert RUN_LINE.fullmatch(proc.stderr), proc.stderr  # only the run id: ADK's logs are routed away


def test_unknown_flow_is_a_usage_error(capsys) -> None:
    code, out, err = run(capsys, str(DATA / "resolver.sr"), "--flow", "nope")
    assert (code, out) == (2, "")
    assert "no flow named 'nope'" in err and "default" in err


def test_log_lines_go_to_stderr(capsys, tmp_path) -> None:
    flow = tmp_path / "logs.sr"
    flow.write_text('flow main:\n    log "step one"\n    notify "heads up"\n    return "done"\n')
    code, out, err = run(capsys, str(flow))
    assert (code, out) == (0, "done\n"), err
    assert err.splitlines() == ["step one", "notify: heads up"]


def test_no_script_and_no_model_says_how_to_run_offline(capsys, tmp_path) -> None:
    alone = tmp_path / "decide.sr"  # without the decide.yaml beside it in DATA, which `run` would use
    alone.write_text((DATA / "decide.sr").read_text())
    code, out, err = run(capsys, str(alone))
    assert (code, out) == (1, "")
    assert "'architect' has no real model and no --script was given" in err and "--script S.yaml" in err


def test_history_policy_summarizes_and_preserves(capsys, monkeypatch) -> None:
    import engine.runtime.scripted_model as sm

    shown: list[list[str]] = []
    original = sm.latest_input

    def spy(request):  # what the agent `a` is shown
        texts = [p.text for c in request.contents for p in c.parts if p.text]
        if "next?" in texts:
            shown.append(texts)
        return original(request)

    monkeypatch.setattr(sm, "latest_input", spy)
    code, out, err = run(capsys, str(DATA / "history.sr"), "--script", str(DATA / "history.yaml"))
    assert (code, out) == (0, "unused\n"), err
    assert shown == [["goal: ship v2", "Summary of the earlier conversation: they counted to three", "four", "five", "next?"]]
