"""engine/files.py: user files are read without hanging on FIFOs or devices, and never past a limit."""

import os
import socket
from pathlib import Path

import pytest

from engine.files import UnreadableFile, check_regular, read_limited


def refusal(path: Path, limit: int = 100) -> str:
    with pytest.raises(UnreadableFile) as info:
        read_limited(path, limit)
    message = str(info.value)
    assert "\n" not in message and str(path) not in message  # one line; the caller names the file
    return message


def test_regular_files_up_to_the_limit(tmp_path: Path):
    f = tmp_path / "a.sr"
    f.write_bytes(b"x" * 100)
    assert read_limited(f, 100) == b"x" * 100
    (tmp_path / "link.sr").symlink_to(f)
    assert read_limited(tmp_path / "link.sr", 100) == b"x" * 100
    assert refusal(f, 99) == "larger than 99 bytes, the limit"
    big = tmp_path / "big.sr"
    with big.open("wb") as out:  # sparse: 16 MiB + 1 without writing them
        out.truncate(16 * 1024 * 1024 + 1)
    assert refusal(big, 16 * 1024 * 1024) == "larger than 16 MiB, the limit"


@pytest.mark.timeout(20)
def test_special_files_are_refused_without_blocking(tmp_path: Path):
    fifo = tmp_path / "f.sr"
    os.mkfifo(fifo)  # no writer: a plain open() would block for ever
    assert refusal(fifo) == "not a regular file (it is a named pipe)"
    (tmp_path / "to-fifo.sr").symlink_to(fifo)
    assert refusal(tmp_path / "to-fifo.sr") == "not a regular file (it is a named pipe)"
    assert refusal(Path("/dev/zero")) == "not a regular file (it is a device)"  # would never end
    assert refusal(tmp_path) == "it is a directory"
    assert refusal(tmp_path / "missing.sr") == "no such file"
    (tmp_path / "dangling.sr").symlink_to(tmp_path / "gone")
    assert refusal(tmp_path / "dangling.sr") == "no such file"
    (tmp_path / "loop.sr").symlink_to(tmp_path / "loop.sr")
    assert refusal(tmp_path / "loop.sr") == "Too many levels of symbolic links"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.sr"))
        assert refusal(tmp_path / "s.sr") == "not a regular file (it is a socket)"
    finally:
        sock.close()
    with pytest.raises(UnreadableFile, match="not a regular file"):
        check_regular(fifo)


def test_a_file_whose_size_lies_is_still_cut_at_the_limit():
    # /proc files say they are empty (st_size 0) and are not: the read itself stops at limit + 1.
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    assert b"Name:" in read_limited(status, 1024 * 1024)
    assert refusal(status, 10) == "larger than 10 bytes, the limit"
