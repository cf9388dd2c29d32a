"""JSON-path-like location strings: ``$``, ``$.headers.authorization``, ``$.items[0]``.

Locations travel as tuples of keys and indices while walking; a string is built only when a
location is reported, not for every node. ``sensitive_paths`` reports locations by key text
(the caller asked where, in its own value); a refusal names map keys by position instead
(``$<key 2>[0]``, as ``forkline_es.values`` does), because its message reaches exceptions
and logs, and a key may be the very secret.
"""

from __future__ import annotations

import json
import re

from forkline_es.errors import InvalidValue
from forkline_es.values._paths import KeyAt, Segment, render_path

__all__ = ["Located", "child_path", "format_location"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def child_path(parent: str, key: object) -> str:
    """Where ``key`` sits under ``parent``; odd keys are bracketed to keep paths unambiguous."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{parent}[{key}]"
    if isinstance(key, str):
        if _IDENTIFIER.match(key):
            return f"{parent}.{key}"
        return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{parent}[{key!r}]"


def format_location(location: tuple[object, ...]) -> str:
    """The path string of a location given as map keys and list indices from the root.

    Built only when a path is reported, not for every node walked.
    """
    path = "$"
    for key in location:
        path = child_path(path, key)
    return path


class Located(Exception):
    """Internal: a refusal at ``location`` (keys and indices from the root), plus the path
    ``below`` it inside the refused value; the public entry points render it by position."""

    def __init__(self, message: str, location: tuple[object, ...], below: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.below = below

    def invalid(self, root: object) -> InvalidValue:
        """The public refusal, its map keys named by position in ``root``, never by text."""
        segments: list[Segment] = []
        node = root
        for key in self.location:
            if isinstance(node, dict):
                segments.append(KeyAt(next(i for i, k in enumerate(node) if k is key or k == key)))
            elif isinstance(key, int):
                segments.append(key)
            node = node[key]  # type: ignore[index]  # the walk came this way
        return InvalidValue(self.message, render_path(segments) + self.below)
