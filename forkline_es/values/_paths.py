"""Locations inside a value, rendered JSON-path style (``$.items[3].at``).

The walkers in this package do not build a path while they descend: that would cost an
allocation per element on the hot path. A refusal travels up as :class:`Refused` and every
container adds its own segment on the way out, so the path is only built when something
is wrong.
"""

from __future__ import annotations

import re

from forkline_es.errors import InvalidValue

__all__ = ["Refused", "refused_to_invalid", "render_path"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


class Refused(Exception):
    """Internal: a value outside the domain, with its path collected innermost first."""

    __slots__ = ("message", "segments")

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.segments: list[str | int] = []


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def render_path(segments: list[str | int]) -> str:
    """Render segments (outermost first): ``.name`` for identifiers, ``["a b"]`` otherwise."""
    parts = ["$"]
    for segment in segments:
        if type(segment) is int:
            parts.append(f"[{segment}]")
        elif _IDENTIFIER.match(str(segment)):
            parts.append(f".{segment}")
        else:
            parts.append('["' + _NEEDS_ESCAPE.sub(_escape_char, str(segment)) + '"]')
    return "".join(parts)


def refused_to_invalid(refused: Refused) -> InvalidValue:
    """The public error for an internal refusal (segments were collected innermost first)."""
    return InvalidValue(refused.message, render_path(refused.segments[::-1]))
