"""A run's variables, flat as language.md has them (meaning 6) and as the origin project ran them.

Every flow and handler of a run reads and sets one table: a called flow sees its caller's
variables and what it sets stays set after it returns; an `on start` handler's variables are there
for the flow. What is a call's own lives in front of that table: a flow's `$input` and
parameters, a handler's message in flight (`$input`, `$output`, `$args`, ...). Setting a name
the call owns changes its own; any other name goes down to the caller, and so to the table.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any


class Variables(MutableMapping[str, Any]):
    __slots__ = ("own", "below")

    def __init__(self, own: dict[str, Any], below: "MutableMapping[str, Any]") -> None:
        self.own = own
        self.below = below  # the caller's variables, or the run's table

    def __getitem__(self, name: str) -> Any:
        if name in self.own:
            return self.own[name]
        return self.below[name]

    def get(self, name: str, default: Any = None) -> Any:
        if name in self.own:
            return self.own[name]
        return self.below.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.own or name in self.below

    def __setitem__(self, name: str, value: Any) -> None:
        if name in self.own:
            self.own[name] = value
        else:
            self.below[name] = value

    def __delitem__(self, name: str) -> None:
        if name in self.own:
            del self.own[name]
        else:
            del self.below[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict(self.below), **self.own})

    def __len__(self) -> int:
        return len({**dict(self.below), **self.own})
