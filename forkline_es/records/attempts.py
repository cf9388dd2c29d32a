"""The attempts of one step, read from a run record's entries: each invoke with its result.

Pure: the CLI's `step` and the web view's step page render the same pairing from this.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["step_attempts", "superseded_by"]


def superseded_by(entries: list[dict[str, Any]]) -> dict[int, int]:
    """Entry seq -> the seq of the recovery that set it aside."""
    return {n: e["seq"] for e in entries if e["kind"] == "recovery" for n in e["supersedes"]}


def step_attempts(
    entries: list[dict[str, Any]], path: str
) -> Iterator[tuple[dict[str, Any], dict[str, Any], int | None]]:
    """Each invoke at ``path`` in seq order, its result entry (``{}`` while it has none) and
    the seq of the recovery that superseded it (None). A result pairs with its invoke by
    (attempt, generation), as the log records them."""
    gone = superseded_by(entries)
    results = {
        (e["attempt"], e["generation"]): e for e in entries if e["kind"] == "result" and e["path"] == path
    }
    for e in entries:
        if e["kind"] == "invoke" and e["path"] == path:
            yield e, results.get((e["attempt"], e["generation"]), {}), gone.get(e["seq"])
