"""`escalate check` / `escalate compile`: exit codes, formats, and no ADK/Textual imports. What a
command says and returns is read in this process (tests/cli_here.py); a real process where only
one shows it: the modules a fresh process imports, a terminal's encoding (and `check`'s exit
code through os._exit)."""

import json
import subprocess
import sys
from pathlib import Path

from tests.cli_here import escalate_here

EXAMPLES = Path(__file__).resolve().parents[2] / "engine" / "examples"
GOOD = 'prompt p: """x"""\nagent a:\n    instruction p\nflow main:\n    return run agent a\n'


def escalate(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return escalate_here(*args, cwd=cwd or Path.cwd())


def test_check_exit_codes_and_formats(tmp_path: Path):
    good = tmp_path / "good.sr"
    good.write_text(GOOD)
    bad = tmp_path / "bad.sr"
    bad.write_text(GOOD + "flow x:\n    run agent nope\n")
    warn = tmp_path / "warn.sr"
    warn.write_text(GOOD + "agent b:\n    instruction p\n    delegate a\n    use a\n")
    assert escalate("check", str(good)).returncode == 0
    assert escalate("check", str(warn)).returncode == 0
    r = escalate("check", str(bad))
    assert r.returncode == 1
    assert r.stdout.splitlines()[0] == f"{bad}:7:15: error[E0001]: undefined agent 'nope'"
    assert "Traceback" not in r.stdout + r.stderr
    r = escalate("check", str(tmp_path), "--format", "json")
    data = json.loads(r.stdout)
    assert r.returncode == 1 and {d["code"] for d in data} == {"E0001", "W0002"}
    assert escalate("check", str(tmp_path / "missing.sr")).returncode == 2
    assert escalate("check").returncode == 2  # usage


def test_compile_prints_or_writes(tmp_path: Path):
    src = tmp_path / "w.sr"
    src.write_text(GOOD)
    r = escalate("compile", str(src))
    assert r.returncode == 0 and "class Workflow(WorkflowBase):" in r.stdout
    out = tmp_path / "w.py"
    assert escalate("compile", str(src), "-o", str(out)).returncode == 0
    compile(out.read_text(), str(out), "exec")
    (tmp_path / "e.sr").write_text("flow x:\n  $a = (\n")
    r = escalate("compile", str(tmp_path / "e.sr"))
    assert r.returncode == 1 and "error[E0007]" in r.stderr and r.stdout == ""
    assert escalate("compile", str(tmp_path / "none.sr")).returncode == 2


def test_check_and_compile_do_not_import_adk_or_textual(tmp_path: Path):
    src = tmp_path / "w.sr"
    src.write_text(GOOD)
    code = (
        "import sys\nfrom engine.cli.main import main\n"
        f"main(['check', {str(src)!r}])\nmain(['compile', {str(src)!r}, '-o', {str(tmp_path / 'o.py')!r}])\n"
        "bad = [m for m in sys.modules if m.startswith(('google.adk', 'google.genai', 'textual'))]\n"
        "print('LOADED', bad)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "LOADED []" in r.stdout, r.stdout + r.stderr


def test_examples_check_clean():
    files = sorted(EXAMPLES.glob("*.sr"))
    assert {f.stem for f in files} >= {"pingpong", "coordinator", "hierarchical", "iterative", "combined"}
    r = escalate("check", str(EXAMPLES), "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout) == []


def test_non_ascii_output_on_an_ascii_terminal(tmp_path: Path):
    """The module is UTF-8 (its first line says so) whatever the terminal's encoding; diagnostics
    the terminal cannot show are escaped, never a UnicodeEncodeError traceback."""
    src = tmp_path / "w.sr"
    src.write_text('flow main:\n    return "h\u00e9llo \u2603"\n', encoding="utf-8")
    env = {**__import__("os").environ, "PYTHONIOENCODING": "ascii"}
    r = subprocess.run([sys.executable, "-m", "engine", "compile", str(src)], capture_output=True, env=env, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(b"# -*- coding: utf-8 -*-\n")
    assert "'h\u00e9llo \u2603'".encode("utf-8") in r.stdout
    src.write_text('flow main:\n    return "h\u00e9llo" + nope\n', encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "engine", "check", str(src)], capture_output=True, env=env, timeout=60)
    assert r.returncode == 1 and b"Traceback" not in r.stdout + r.stderr and b"h\\xe9llo" in r.stdout
