"""File tools and links: a hard or symbolic link inside the workspace never lets a tool write or
delete outside it. Real files and links in a temporary folder."""

from __future__ import annotations

import asyncio
import os
import stat
import tracemalloc
from pathlib import Path

import pytest

from engine.runtime.tools.fs import MAX_READ_BYTES, fs_functions
from engine.runtime.tools.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> tuple[Path, Path, dict]:
    """(workspace, a folder outside it, the tools)."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    return root, outside, {f.__name__: f for f in fs_functions(Workspace(root), readonly=False)}


async def test_write_through_a_hard_link_leaves_the_outside_file_alone(ws) -> None:
    root, outside, fs = ws
    (outside / "secret.txt").write_text("outside")
    os.link(outside / "secret.txt", root / "inside.txt")
    assert (await fs["write_file"]("inside.txt", "agent"))["written"] == 5
    assert (outside / "secret.txt").read_text() == "outside"
    assert (root / "inside.txt").read_text() == "agent"
    assert os.stat(root / "inside.txt").st_nlink == 1  # a file of its own now


async def test_write_keeps_the_permission_bits_and_leaves_no_temporary_file(ws) -> None:
    root, _, fs = ws
    script = root / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    await fs["write_file"]("run.sh", "new")
    assert script.read_text() == "new" and stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(p.name for p in root.iterdir()) == ["run.sh"]


async def test_write_through_a_symlink_inside_writes_its_target(ws) -> None:
    root, _, fs = ws
    (root / "real.txt").write_text("old")
    os.symlink("real.txt", root / "alias.txt")
    await fs["write_file"]("alias.txt", "new")
    assert (root / "real.txt").read_text() == "new" and (root / "alias.txt").is_symlink()


@pytest.mark.parametrize("points_to", ["outside", "inside", "dangling", "folder"])
async def test_delete_on_a_symlink_deletes_the_link_only(ws, points_to: str) -> None:
    root, outside, fs = ws
    (outside / "target.txt").write_text("keep me")
    (root / "target.txt").write_text("keep me too")
    target = {
        "outside": outside / "target.txt",
        "inside": root / "target.txt",
        "dangling": root / "gone.txt",
        "folder": outside,
    }[points_to]
    os.symlink(target, root / "link")
    assert (await fs["delete_file"]("link")) == {"path": "link", "deleted": True}
    assert not os.path.lexists(root / "link")
    assert (outside / "target.txt").read_text() == "keep me"
    assert (root / "target.txt").read_text() == "keep me too"


async def test_delete_refuses_folders_and_paths_through_links_that_lead_out(ws) -> None:
    root, outside, fs = ws
    (outside / "x.txt").write_text("keep")
    (root / "sub").mkdir()
    os.symlink(outside, root / "out")
    assert "not a file" in (await fs["delete_file"]("sub"))["error"]
    assert "not a file" in (await fs["delete_file"]("."))["error"]
    assert "outside the workspace" in (await fs["delete_file"]("out/x.txt"))["error"]
    assert "outside the workspace" in (await fs["delete_file"]("sub/../../outside/x.txt"))["error"]
    assert "no such file" in (await fs["delete_file"]("nope.txt"))["error"]
    assert (outside / "x.txt").exists() and (root / "sub").is_dir()


async def test_writes_and_reads_never_block_on_a_fifo(ws) -> None:
    root, _, fs = ws
    os.mkfifo(root / "pipe")
    read, write = await asyncio.wait_for(
        asyncio.gather(fs["read_file"]("pipe"), fs["write_file"]("pipe", "x")), timeout=10
    )
    assert "not a file" in read["error"] and "not a file" in write["error"]


async def test_a_huge_file_is_not_read_whole(ws) -> None:
    root, _, fs = ws
    with open(root / "big.bin", "wb") as f:
        f.truncate(50 * MAX_READ_BYTES)  # sparse: 50 MB that take no disk
    tracemalloc.start()
    try:
        result = await fs["read_file"]("big.bin")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result["truncated"] is True and len(result["content"]) == MAX_READ_BYTES
    assert peak < 10 * MAX_READ_BYTES  # the whole file would be 50 times the limit
