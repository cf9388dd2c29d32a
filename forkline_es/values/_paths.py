"""Locations inside a value, rendered JSON-path style (``$.value<key 2>[3]``).

The walkers in this package do not build a path while they descend: that would cost an
allocation per element on the hot path. A refusal travels up as :class:`Refused` and every
container adds its own segment on the way out, so the path is only built when something
is wrong.

A map key is named by its position, never by its text (``<key 2>``: the map's third key,
zero-based like a list index, in the order the map was given): keys are recorded data too,
and a secret used as a key (``{"sk_live_...": 1}``) must not travel into an exception
message or a log event. Member names of the typed encoding itself (``value``, ``instant``)
are ours and are written as names.
"""

from __future__ import annotations

import re

from forkline_es.errors import InvalidValue

__all__ = ["KeyAt", "Refused", "Segment", "refused_to_invalid", "render_path"]

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


class KeyAt:
    """A path segment: the map key at ``position`` (zero-based, in the map's order)."""

    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position

    def __eq__(self, other: object) -> bool:
        return type(other) is KeyAt and other.position == self.position

    def __hash__(self) -> int:
        return hash((KeyAt, self.position))

    def __repr__(self) -> str:
        return f"KeyAt({self.position})"


#: A list index, a map key by position, or a member name of our own encoding.
Segment = str | int | KeyAt


class Refused(Exception):
    """Internal: a value outside the domain, with its path collected innermost first."""

    __slots__ = ("message", "segments")

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.segments: list[Segment] = []


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def render_path(segments: list[Segment]) -> str:
    """Render segments (outermost first): ``[3]`` for an index, ``<key 2>`` for a map key,
    ``.name`` for an identifier, ``["a b"]`` for any other name."""
    parts = ["$"]
    for segment in segments:
        if type(segment) is int:
            parts.append(f"[{segment}]")
        elif type(segment) is KeyAt:
            parts.append(f"<key {segment.position}>")
        elif _IDENTIFIER.match(str(segment)):
            parts.append(f".{segment}")
        else:
            parts.append('["' + _NEEDS_ESCAPE.sub(_escape_char, str(segment)) + '"]')
    return "".join(parts)


def refused_to_invalid(refused: Refused) -> InvalidValue:
    """The public error for an internal refusal (segments were collected innermost first)."""
    return InvalidValue(refused.message, render_path(refused.segments[::-1]))
