"""Run Python code the way an ordinary user would, even when the suite runs as root (CI does):
root reads every file, so a permission test would otherwise have nothing to test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Root without these two capabilities obeys file permission bits like anyone else.
_DROP_FILE_OVERRIDES = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -c code` in a child process that file permissions apply to."""
    prefix = _DROP_FILE_OVERRIDES if os.geteuid() == 0 else []
    return subprocess.run([*prefix, sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


OTHER_UID = 54321  # another local user: owns nothing here, belongs to no group of ours


def bound_by_permissions() -> list[str]:
    """A command prefix: this user, with file permissions applying to it even as root."""
    return list(_DROP_FILE_OVERRIDES) if os.geteuid() == 0 else []


def as_other_user() -> list[str]:
    """A command prefix: the command runs as OTHER_UID (only root may use it)."""
    uid = str(OTHER_UID)
    return ["setpriv", "--reuid", uid, "--regid", uid, "--clear-groups", "--"]
