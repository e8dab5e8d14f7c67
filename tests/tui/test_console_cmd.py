"""`escalate console` refuses bad input before any screen opens: one line, exit 2, no traceback."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from engine.cli.console_cmd import script_for
from engine.cli.main import main

GOOD = """\
model main = anthropic/claude-sonnet-4

agent main:
    instruction hello

prompt hello: \"\"\"Say hello.\"\"\"
"""


def run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert gc.isenabled()  # the command holds the collector off for start-up only
    return code, err


def test_missing_file(tmp_path: Path, capsys) -> None:
    code, err = run(["console", str(tmp_path / "nope.sr")], capsys)
    assert code == 2
    assert err.strip() == f"escalate: error: {tmp_path / 'nope.sr'}: no such file"


def test_file_that_does_not_compile(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.sr"
    bad.write_text("agent main:\n    instruction missing_prompt\n")
    code, err = run(["console", str(bad)], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"{bad}:2:")
    assert "error[E" in err


def test_bad_rules_file(tmp_path: Path, capsys) -> None:
    wf = tmp_path / "ok.sr"
    wf.write_text(GOOD)
    rules = tmp_path / "r.yaml"
    rules.write_text("escalationRules:\n  global:\n    - pattern: x\n      action: explode\n")
    code, err = run(["console", str(wf), "--rules", str(rules)], capsys)
    assert code == 2
    assert err.startswith(f"{rules}:4:")


def test_bad_script_beside_the_workflow(tmp_path: Path, capsys) -> None:
    wf = tmp_path / "ok.sr"
    wf.write_text(GOOD)
    (tmp_path / "ok.yaml").write_text("agents:\n  main:\n    - {text: hi, tool: x}\n")
    code, err = run(["console", str(wf)], capsys)
    assert code == 2
    assert err.startswith(f"{tmp_path / 'ok.yaml'}:3:")


def test_input_without_run(tmp_path: Path, capsys) -> None:
    wf = tmp_path / "ok.sr"
    wf.write_text(GOOD)
    code, err = run(["console", str(wf), "--input", "x"], capsys)
    assert code == 2
    assert "--input is only used with --run" in err


def test_script_choice(tmp_path: Path) -> None:
    wf = tmp_path / "flow.sr"
    wf.write_text(GOOD)
    assert script_for(wf, None) is None
    (tmp_path / "flow.yaml").write_text("agents: {}\n")
    assert script_for(wf, None) == tmp_path / "flow.yaml"
    assert script_for(wf, Path("other.yaml")) == Path("other.yaml")


def test_usage_error_from_argparse(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["console", "--bogus"])
    assert exc.value.code == 2


def test_preload_gives_the_collector_back_even_when_the_runtime_cannot_load(monkeypatch) -> None:
    from tui import session

    monkeypatch.setattr(session, "ENGINE_MODULE", "engine.no_such_runtime")
    threshold = gc.get_threshold()
    gc.disable()  # as the console command leaves it for start-up
    try:
        with pytest.raises(ModuleNotFoundError):
            session.ConsoleSession.preload()
        assert gc.isenabled()
        assert gc.get_threshold()[::2] == (session.YOUNG_GC_EVERY, session.FULL_GC_EVERY)
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*threshold)
