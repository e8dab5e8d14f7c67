"""Where a console's or a run's rules come from, and where rules taught from decisions go.

Light on purpose (no YAML import): the console command builds its book before the first frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rules.workspace import workspace_rules_path

if TYPE_CHECKING:
    from rules.model import Rule, Rules


@dataclass(frozen=True)
class RuleBook:
    """The `--rules` file when one was given (taught rules are saved there), else the
    workspace's `.escalate/rules.yaml` layered over `base` (the shipped rules, or the demo's)."""

    explicit: Path | None = None
    base: Path | None = None
    workspace: Path | None = None

    @property
    def target(self) -> Path:
        return self.explicit if self.explicit is not None else workspace_rules_path(self.workspace)

    def load(self) -> "Rules":
        from rules.loader import load_layered  # YAML: only when the rules are read

        return load_layered(self.explicit, self.base, self.workspace)

    def writable(self, rule: "Rule") -> bool:
        """Rules of the target file can be removed here; shipped and demo rules cannot."""
        return bool(rule.file) and Path(rule.file).resolve() == self.target.resolve()
