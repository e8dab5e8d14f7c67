"""The run's workspace: the one folder tools may touch. Every path an agent gives goes through
`Workspace.resolve`, which refuses anything that ends up outside (`..`, absolute paths,
symlinks pointing out)."""

from __future__ import annotations

from pathlib import Path


class PathRefused(Exception):
    """A tool path that leaves the workspace."""


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve(self, path: str) -> Path:
        """The real path inside the workspace; raises PathRefused otherwise."""
        if not isinstance(path, str) or "\x00" in path:
            raise PathRefused(f"invalid path {path!r}")
        raw = Path(path.strip() or ".")
        candidate = raw if raw.is_absolute() else self.root / raw
        # resolve() follows symlinks, so a link inside pointing outside is caught here too.
        real = candidate.resolve()
        if real != self.root and not real.is_relative_to(self.root):
            raise PathRefused(f"path {path!r} is outside the workspace")
        return real

    def relative(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return rel or "."
