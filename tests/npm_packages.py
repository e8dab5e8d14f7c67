"""The real agents some tests drive, from npm: a folder's pinned packages (its package.json and
package-lock.json), installed with `npm ci` the first time a test needs them. `.ci/run` installs
them before the suite; a newcomer's plain `pytest` installs them here, once (the xdist workers
wait for each other on a lock of the folder's package.json). Never a skip: a missing npm or a
failed install fails the test, saying why."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest


def installed(folder: Path, binary: str) -> Path:
    """`folder/node_modules/.bin/binary`, installed first if it is missing."""
    path = folder / "node_modules" / ".bin" / binary
    if path.exists():
        return path
    with open(folder / "package.json", "rb") as manifest:
        fcntl.flock(manifest, fcntl.LOCK_EX)  # one install; the other workers find it done
        if not path.exists():
            npm = shutil.which("npm")
            if npm is None:
                pytest.fail(f"{path} is missing and npm is not installed (Debian: apt-get install npm; .ci/run does)")
            done = subprocess.run([npm, "ci", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error"],
                                  capture_output=True, text=True, timeout=1200)
            if done.returncode != 0 or not path.exists():
                pytest.fail(f"npm ci in {folder} failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return path
