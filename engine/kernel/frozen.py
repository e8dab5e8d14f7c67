"""Frozen records declared like frozen dataclasses (annotated fields, defaults, `factory` for a
default made anew), for the types `escalate hook` builds at every tool call of every agent session:
the rules, the verdict, the hook's call and session.

Why not `dataclasses`: in Python 3.11 each dataclass compiles its six methods from source when its
module is imported (~3.4 M instructions a class), and `import dataclasses` imports `inspect` (43 M
more): together 40 % of a call the rules decide (98 M of 250 M instructions, counted with valgrind,
docs/outside.md "Speed"). These methods are written once, here, and compiled with the module.

Same behaviour as a frozen dataclass: positional or keyword arguments in field order (a subclass's
fields after its base's), equality and hash by the fields' values between records of one class,
`Name(field=value, ...)` as repr, assignment refused; `replace` is `dataclasses.replace`'s.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar


class factory:  # noqa: N801 - spelled like dataclasses.field(default_factory=...), which it stands for
    """A field's default made anew for each record: `paths: dict[str, str] = factory(dict)`."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class Frozen:
    """The base of a frozen record (see the module's docstring)."""

    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name, kind in cls.__dict__.get("__annotations__", {}).items()
               if not str(kind).startswith(("ClassVar", "typing.ClassVar"))]
        cls._fields = tuple(dict.fromkeys(cls._fields + tuple(own)))
        cls._defaults = dict(cls._defaults)
        for name in own:
            if name in cls.__dict__:
                cls._defaults[name] = cls.__dict__[name]
                if isinstance(cls.__dict__[name], factory):
                    delattr(cls, name)
            elif name in cls._defaults:  # a field given again without a default
                del cls._defaults[name]
        defaulted = False
        for name in cls._fields:
            if name not in cls._defaults and defaulted:
                raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with a default")
            defaulted = defaulted or name in cls._defaults

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} positional arguments but {len(args)} were given")
        values = dict(zip(fields, args))
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
            values[name] = value
        state = self.__dict__
        for name in fields:
            if name in values:
                state[name] = values[name]
            elif name in self._defaults:
                default = self._defaults[name]
                state[name] = default.make() if isinstance(default, factory) else default
            else:
                raise TypeError(f"{type(self).__name__}() missing required argument: {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(self.__dict__[name] for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


R = TypeVar("R", bound=Frozen)


def replace(record: R, **changes: Any) -> R:
    """A copy of `record` with `changes` (as dataclasses.replace)."""
    return type(record)(**{**{name: record.__dict__[name] for name in record._fields}, **changes})
