"""JSON-path-like location strings: ``$``, ``$.headers.authorization``, ``$.items[0]``.

Locations travel as tuples of keys and indices while walking; a string is built only when a
location is reported, not for every node.
"""

from __future__ import annotations

import json
import re

__all__ = ["child_path", "format_location"]

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
