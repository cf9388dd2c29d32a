"""What a payload argument may be besides a plain value: absent, not recorded, sensitive, partial."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from forkline_es.errors import InvalidValue

__all__ = ["MISSING", "NOT_RECORDED", "Partial", "Sensitive"]


class _Marker:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"forkline_es.{self._name}"

    def __reduce__(self) -> str:
        return self._name


#: No value passed: the slot is absent (no such payload was produced).
MISSING: Final = _Marker("MISSING")
#: The payload exists but the executor did not record it: slot state ``not-recorded``.
NOT_RECORDED: Final = _Marker("NOT_RECORDED")


class Sensitive:
    """A value that must never reach the disk: its slot is recorded as ``withheld``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "Sensitive(<withheld>)"


class Partial:
    """A dry-run partial value: ``suppressed`` lists paths (map keys / list indices) left out."""

    __slots__ = ("suppressed", "value")

    def __init__(self, value: Any, suppressed: Sequence[Sequence[str | int]]) -> None:
        try:
            if isinstance(suppressed, str | bytes) or any(isinstance(p, str | bytes) for p in suppressed):
                raise TypeError
            paths = [list(p) for p in suppressed]
        except TypeError:
            raise InvalidValue(
                "suppressed is a list of paths, each a list of map keys and list indices "
                "(e.g. [['a', 0]]; [[]] is the whole value), not a string",
                "$",
            ) from None
        self.value = value
        self.suppressed = paths

    def __repr__(self) -> str:
        return f"Partial({self.value!r}, suppressed={self.suppressed!r})"
