"""Files and folders that are this user's alone.

What escalate keeps on disk (the database, the news sockets, the console's log) is read by other
processes of the same user only. A folder someone else made first (in /tmp, or beside a database
in a shared folder) is never used: it is checked with `lstat` (a directory, not a link, owned by
this user, no access for group or others) every time it is opened, and refused otherwise.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotPrivate(Exception):
    """A folder that is not this user's alone: one line naming it and why."""


def why(exc: Exception) -> str:
    """One line for a NotPrivate or an OSError met making or opening such a folder."""
    if isinstance(exc, OSError):
        return f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc.strerror or exc)
    return str(exc)


def check_private(path: Path) -> None:
    """Raise NotPrivate unless `path` is a directory of this user's that nobody else may use."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise NotPrivate(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise NotPrivate(f"{path}: a symbolic link, not a folder")
    if not stat.S_ISDIR(info.st_mode):
        raise NotPrivate(f"{path}: not a folder")
    if info.st_uid != os.geteuid():
        raise NotPrivate(f"{path}: owned by user {info.st_uid}, not by this user ({os.geteuid()})")
    if info.st_mode & 0o077:
        raise NotPrivate(f"{path}: open to other users (mode {stat.S_IMODE(info.st_mode):04o})")


def private_folder(path: Path) -> Path:
    """`path` made (0700) unless it exists, then checked; its parent must exist. NotPrivate
    when it cannot be made or is not this user's alone."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise NotPrivate(f"{path}: cannot create: {exc.strerror or exc}") from None
    check_private(path)
    return path


def make_folders(path: Path) -> None:
    """`path` and its missing parents, each made 0700 (what exists is left as it is). OSError."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:  # another process made it meanwhile
            pass


def create_private_file(path: Path) -> None:
    """Create `path` empty, readable and writable by this user only, unless something exists
    there (left as it is: never opened here, so a FIFO cannot block). OSError."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def user_folder() -> Path:
    """This user's own folder for sockets and logs (not made here): `$XDG_RUNTIME_DIR/escalate`
    when that variable names a folder of this user's alone, else `escalate-UID` in the temporary
    folder. The name is predictable, so whoever opens it checks it (`private_folder`)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        try:
            check_private(Path(runtime))
            return Path(runtime) / "escalate"
        except NotPrivate:
            pass
    import tempfile  # not for a hook's rules in the user's cache folder (check_private): ~7 M instructions

    return Path(tempfile.gettempdir()) / f"escalate-{os.geteuid()}"


def user_cache_folder() -> Path | None:
    """This user's cache folder for escalate (not made here): `$XDG_CACHE_HOME/escalate` when that
    variable is an absolute path (the XDG spec ignores a relative one), else `~/.cache/escalate`;
    None when no home folder can be found (never a folder under the current one)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
        if not os.path.isabs(base):
            return None
    return Path(base) / "escalate"
