"""Step paths (decisions.md, Step paths): one rule, used by recording and by lookups."""

from __future__ import annotations

import re
from typing import Final

from forkline_es.errors import InvalidRequest

__all__ = ["MAX_PATH_CHARS", "MAX_SEGMENTS", "check_path", "is_step_path", "path_problem"]

MAX_SEGMENTS: Final = 64
MAX_PATH_CHARS: Final = 1024

_SEGMENT: Final = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_-]*|0|[1-9][0-9]*|\$[A-Za-z_][A-Za-z0-9_-]*)\Z")


def path_problem(path: object) -> str | None:
    """Why ``path`` is not a well-formed step path, or None when it is."""
    if not isinstance(path, str):
        return f"a step path is a string, not {type(path).__name__}"
    if not path:
        return "a step path is not empty"
    if len(path) > MAX_PATH_CHARS:
        return f"a step path has at most {MAX_PATH_CHARS} characters"
    segments = path.split("/")
    if len(segments) > MAX_SEGMENTS:
        return f"a step path has at most {MAX_SEGMENTS} segments"
    for i, seg in enumerate(segments):
        if not _SEGMENT.match(seg):
            what = "empty" if not seg else repr(seg)
            return (
                f"segment {i} of {path!r} is {what}: a segment is a name ([A-Za-z_][A-Za-z0-9_-]*), "
                "a zero-based index (0 or [1-9][0-9]*) or a reserved $name"
            )
    return None


def is_step_path(path: object) -> bool:
    return path_problem(path) is None


def check_path(path: object) -> str:
    problem = path_problem(path)
    if problem is not None:
        raise InvalidRequest(f"malformed step path: {problem}")
    assert isinstance(path, str)
    return path
