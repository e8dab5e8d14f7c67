"""Hostile `.sr` inputs: imports stay in the project folder, and no FIFO, device or huge file
hangs `check`, `compile`, `run` or `console` (each refused in one line, with the contract's exit code)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.lang.compiler import allow_imports_outside, compile_file
from tests.cli_here import escalate_here

SECRET = "SECRETTOKEN_4711"  # the first token of a file outside the project: it must never show
USES_LIB = "flow main:\n    return 1\n"


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/outside/secret.sr, and the project tmp/proj with a lib in a subfolder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.sr").write_text(f"{SECRET} is not a program\n")
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "lib.sr").write_text('prompt p: """hi"""\n')
    (proj / "link.sr").symlink_to(outside / "secret.sr")
    (proj / "dirlink").symlink_to(outside)
    return tmp_path


OUTSIDE_IMPORTS = [
    "../outside/secret.sr",
    "./../outside/secret.sr",
    "..//outside/secret.sr",
    "./sub/../../outside/secret.sr",
    "../../../../../../../../../../etc/passwd",
    "./link.sr",  # a symbolic link inside the project to a file outside
    "./dirlink/secret.sr",  # through a linked folder
]


def test_imports_outside_the_project_are_refused_unread(layout: Path):
    proj = layout / "proj"
    for n, target in enumerate(OUTSIDE_IMPORTS):
        main_sr = proj / f"m{n}.sr"
        main_sr.write_text(f"\nimport {target}\n{USES_LIB}")
        r = compile_file(main_sr)
        [d] = r.diagnostics
        assert (d.code, d.line, d.column) == ("E0005", 2, 1), (target, d)
        assert d.message == f"cannot import '{target}': it is outside the project folder {proj}"
        assert "--allow-imports-outside" in (d.help or "")
        shown = d.message + (d.help or "") + "".join(r.sources.values())
        assert SECRET not in shown and "root:" not in shown
        assert list(r.sources) == [str(main_sr)]  # nothing else was read


def test_the_project_folder_is_the_top_level_files_folder(layout: Path):
    proj = layout / "proj"
    # sub/a.sr may reach ../lib.sr when compiled as part of proj/main.sr ...
    (proj / "sub" / "a.sr").write_text('import ../lib.sr\nagent a:\n    instruction p\n')
    (proj / "main.sr").write_text("import ./sub/a.sr\nflow main:\n    return run agent a\n")
    assert compile_file(proj / "main.sr").ok
    # ... but given on its own, sub/ is its project and ../lib.sr is outside it.
    d = compile_file(proj / "sub" / "a.sr").diagnostics[0]
    assert d.code == "E0005" and "outside the project folder" in d.message
    # A nested import going outside is refused at its own position, in its own file.
    (proj / "sub" / "b.sr").write_text('prompt q: """x"""\n\nimport ../../outside/secret.sr\n')
    (proj / "main2.sr").write_text(f"import ./sub/b.sr\n{USES_LIB}")
    [d] = compile_file(proj / "main2.sr").diagnostics
    assert (d.file, d.line, d.code) == (str((proj / "sub" / "b.sr").resolve()), 3, "E0005")
    # The top-level file given through a symbolic link: its project is the real file's folder.
    (layout / "outside" / "via.sr").symlink_to(proj / "main.sr")
    assert compile_file(layout / "outside" / "via.sr").ok


def test_the_flag_lets_imports_out(layout: Path):
    main_sr = layout / "proj" / "m.sr"
    main_sr.write_text(f"import ../outside/secret.sr\n{USES_LIB}")
    allow_imports_outside(True)
    try:
        r = compile_file(main_sr)
    finally:
        allow_imports_outside(False)
    assert [d.code for d in r.diagnostics] == ["E0007"] and r.diagnostics[0].file.endswith("secret.sr")
    assert compile_file(main_sr).diagnostics[0].code == "E0005"  # the cache keeps the two apart


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_every_command_takes_the_flag(layout: Path):
    """check, compile, run and console refuse the import without the flag, and read the outside
    file with it (its syntax error is then the one reported). What each says and returns, not its
    process: run here (tests/cli_here.py), 8 processes fewer."""
    main_sr = layout / "proj" / "m.sr"
    main_sr.write_text(f"import ../outside/secret.sr\n{USES_LIB}")
    expected_exit = {"check": 1, "compile": 1, "run": 2, "console": 2}
    for command, code in expected_exit.items():
        for flag in ([], ["--allow-imports-outside"]):
            r = escalate_here(command, str(main_sr), *flag, cwd=Path.cwd())
            both = r.stdout + r.stderr
            assert r.returncode == code and "Traceback" not in both, (command, flag, both)
            if flag:
                assert "secret.sr:1:1: error[E0007]" in both, (command, both)
            else:
                assert "error[E0005]: cannot import '../outside/secret.sr': it is outside" in both, (command, both)
                assert SECRET not in both


@pytest.fixture
def specials(tmp_path: Path) -> list[Path]:
    fifo = tmp_path / "pipe.sr"
    os.mkfifo(fifo)  # no writer: opening it the usual way blocks for ever
    return [fifo, Path("/dev/zero")]  # /dev/zero never ends


@pytest.mark.timeout(60)
def test_special_files_on_the_command_line_are_refused(specials: list[Path], capsys):
    for path in specials:
        for command in ("check", "compile", "run", "console"):
            code = main([command, str(path)])
            out, err = capsys.readouterr()
            lines = [ln for ln in (out + err).splitlines() if ln.strip() and not ln.startswith("checked ")]
            assert code == 2 and len(lines) == 1, (command, path, out, err)
            assert str(path) in lines[0] and "not a regular file" in lines[0], lines


@pytest.mark.timeout(60)
def test_special_and_huge_files_reached_by_import(specials: list[Path], tmp_path: Path):
    fifo, zero = specials
    (tmp_path / "zero.sr").symlink_to(zero)
    with (tmp_path / "huge.sr").open("wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)
    main_sr = tmp_path / "main.sr"
    main_sr.write_text(f"import ./{fifo.name}\nimport ./huge.sr\n{USES_LIB}")
    got = [(d.code, d.line, d.message) for d in compile_file(main_sr).diagnostics]
    assert got == [("E0005", 1, f"cannot import './{fifo.name}': not a regular file (it is a named pipe)"),
                   ("E0005", 2, "cannot import './huge.sr': larger than 16 MiB, the limit")]
    main_sr.write_text(f"import ./zero.sr\n{USES_LIB}")  # resolves to /dev/zero: outside, refused unread
    assert "outside the project folder" in compile_file(main_sr).diagnostics[0].message
    allow_imports_outside(True)
    try:
        [d] = compile_file(main_sr).diagnostics
    finally:
        allow_imports_outside(False)
    assert d.message == "cannot import './zero.sr': not a regular file (it is a device)"
    [d] = compile_file(tmp_path / "huge.sr").diagnostics
    assert (d.code, d.message) == ("E0020", "cannot read file: larger than 16 MiB, the limit")


def test_check_output_holds_no_terminal_control(tmp_path: Path):
    """A folder's file names and a file's import paths reach the diagnostics: an OSC 52 sequence
    there would write to the terminal's clipboard. They are shown through the one sanitizer."""
    osc = "\x1b]52;c;aGk=\x07"
    (tmp_path / f"a{osc}b.sr").write_text(f"flow main:\n    return nope\nimport ./{osc}x.sr\n")
    os.close(os.open(os.fsencode(tmp_path) + b"/bad\xffname.sr", os.O_CREAT | os.O_WRONLY))  # not UTF-8
    r = subprocess.run([sys.executable, "-m", "engine", "check", str(tmp_path)], capture_output=True, timeout=60)
    both = r.stdout + r.stderr
    assert r.returncode == 1 and b"Traceback" not in both
    assert b"\x1b" not in both and b"\x07" not in both
    assert "a␛]52;c;aGk=␇b.sr:2:12: error[E0002]".encode() in r.stdout
    assert "cannot import './␛]52;c;aGk=␇x.sr'".encode() in r.stdout


def test_import_paths_that_name_no_file(tmp_path: Path):
    (tmp_path / "loop.sr").symlink_to(tmp_path / "loop.sr")
    (tmp_path / "m.sr").write_text(f"import ./loop.sr\nimport ./a\x00b.sr\nimport ./{'x' * 300}.sr\nimport ./.\n{USES_LIB}")
    got = [(d.code, d.line, d.message.split(": ", 1)[1]) for d in compile_file(tmp_path / "m.sr").diagnostics]
    assert got == [("E0005", 1, "its symbolic links loop"), ("E0005", 2, "not a usable file name"),
                   ("E0005", 3, "File name too long"), ("E0005", 4, "it is a directory")]
