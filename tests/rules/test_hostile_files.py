"""Files that are not files: a FIFO, a device, a directory, a huge file, as any of the three
YAML files. One line naming the file, at once; never a hang or a memory blow-up."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Callable

import pytest

from engine.escalation.answers import load_answers
from engine.files import UnreadableFile, read_limited
from engine.runtime.script import load_script
from rules import load_rules
from rules.yamlnodes import MAX_FILE_BYTES, YamlUnreadable
from tests.unprivileged import run_python

LOADERS: dict[str, Callable[[Path], object]] = {"rules": load_rules, "script": load_script, "answers": load_answers}

pytestmark = pytest.mark.timeout(20)  # a blocking open() or an endless read fails, not hangs


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


def big(tmp_path: Path) -> Path:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"# " + b"x" * MAX_FILE_BYTES + b"\n")
    return path


def unix_socket(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))  # left bound: the file stays a socket for the test's duration
    return path


def zero_link(tmp_path: Path) -> Path:
    link = tmp_path / "z.yaml"
    link.symlink_to("/dev/zero")
    return link


CASES: list[tuple[str, Callable[[Path], Path], str]] = [
    ("fifo", fifo, "not a regular file (it is a named pipe)"),
    ("dev-zero", lambda _: Path("/dev/zero"), "not a regular file (it is a device)"),
    ("dev-null", lambda _: Path("/dev/null"), "not a regular file (it is a device)"),
    ("link-to-dev-zero", zero_link, "not a regular file (it is a device)"),
    ("socket", unix_socket, "not a regular file (it is a socket)"),
    ("directory", lambda tmp: tmp, "it is a directory"),
    ("missing", lambda tmp: tmp / "nope.yaml", "no such file"),
    ("too-big", big, "larger than 4 MiB, the limit"),
    ("proc-mem", lambda _: Path("/proc/self/mem"), "Input/output error"),
]


@pytest.mark.parametrize("kind", list(LOADERS))
@pytest.mark.parametrize(("make", "why"), [(m, w) for _, m, w in CASES], ids=[n for n, _, _ in CASES])
def test_what_is_not_a_readable_file_is_one_line(kind: str, make: Callable[[Path], Path], why: str, tmp_path: Path) -> None:
    path = make(tmp_path)
    with pytest.raises(YamlUnreadable) as info:
        LOADERS[kind](path)
    assert str(info.value) == f"{path}: cannot read file: {why}"


# Reading 4 MiB of YAML is CPU: 1.5 s on a quiet core, more than the module's 20 s (its guard
# against a blocking open) with six test processes on two loaded cores (failed so, once).
@pytest.mark.timeout(300)
def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "full.yaml"
    path.write_bytes(b"#" * (MAX_FILE_BYTES - 1) + b"\n")
    assert load_answers(path) == []


def test_read_limited_reads_regular_files_whole_and_names_sizes(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    assert read_limited(path, 3) == b"abc"
    with pytest.raises(UnreadableFile, match="^larger than 2 bytes, the limit$"):
        read_limited(path, 2)
    path.write_bytes(b"x" * 3000)
    with pytest.raises(UnreadableFile, match="^larger than 2048 bytes, the limit$"):
        read_limited(path, 2048)


def test_an_unreadable_file_says_why(tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    path.write_text("[]")
    path.chmod(0)
    done = run_python("from pathlib import Path\n"
                      "from engine.escalation.answers import load_answers\n"
                      "from rules.yamlnodes import YamlUnreadable\n"
                      "try:\n    load_answers(Path('secret.yaml'))\n"
                      "except YamlUnreadable as e:\n    print(e)\n", tmp_path)
    assert done.stdout.rstrip().endswith(": cannot read file: Permission denied"), done
