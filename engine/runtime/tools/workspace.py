"""The run's workspace: the one folder the file tools may touch. Every path an agent gives goes
through `Workspace.resolve` (or `entry`), which refuses anything that ends up outside (`..`,
absolute paths, symlinks pointing out). This confines the file tools only: `run_command` runs a
real shell (docs/escalation.md says what rules can and cannot stop)."""

from __future__ import annotations

from pathlib import Path


class PathRefused(Exception):
    """A tool path that leaves the workspace."""


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, path: str) -> Path:
        """The real path inside the workspace, every symlink followed; raises PathRefused
        otherwise. For reading and writing what a path names."""
        return self._inside(self._candidate(path).resolve(), path)

    def entry(self, path: str) -> Path:
        """The path with its folders resolved but its last part not followed: the directory
        entry itself, for acting on a symlink rather than on what it points to (deleting)."""
        candidate = self._candidate(path)
        if candidate.name in ("", "..") or candidate == self.root:  # a folder: nothing to keep unfollowed
            return self.resolve(path)
        return self._inside(candidate.parent.resolve(), path) / candidate.name

    def relative(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return rel or "."

    def _candidate(self, path: str) -> Path:
        if not isinstance(path, str) or "\x00" in path:
            raise PathRefused(f"invalid path {path!r}")
        raw = Path(path.strip() or ".")
        return raw if raw.is_absolute() else self.root / raw

    def _inside(self, real: Path, path: str) -> Path:
        # `real` has its symlinks resolved, so a link inside pointing outside is caught here too.
        if real != self.root and not real.is_relative_to(self.root):
            raise PathRefused(f"path {path!r} is outside the workspace")
        return real
