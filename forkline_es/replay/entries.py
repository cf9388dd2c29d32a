"""The entries a diff considers, their alignment keys, and what of them is compared.

A run's *active entries* are its ordered record entries minus the superseded ones (those
listed in any recovery entry's ``supersedes``) and minus the recovery entries themselves,
which only record a generation transition. Each active entry gets an alignment key
``(kind, path, attempt, phase, n)``; ``n`` counts earlier active entries with the same
first four parts, so keys are unique within a run and the nth retry of a key pairs with
the nth on the other side. A ``conclude`` entry's key leaves its ``path`` out: a run
concludes once, so the two conclusions pair up and a different path is a ``conclusion``
divergence, not a missing and an extra entry.

What varies between two faithful executions of the same work is left out of the
comparison by position in the document, never by a field name inside a user value:
``seq`` and ``generation`` of every entry, ``step.generation``, and the child run id of a
``child`` entry (compared by the child's own record instead, see ``diff``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "TIME_MEMBERS",
    "Key",
    "active_entries",
    "comparable",
    "entry_path",
    "key_of",
    "keys_of",
    "placement",
    "without_varying",
]

#: (entry kind, step path or "", attempt or 0, step status or "", occurrence number)
Key = tuple[str, str, int, str, int]


def active_entries(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The document's entries still in consideration, in recorded order."""
    entries: list[dict[str, Any]] = list(document.get("entries") or [])
    superseded: set[int] = set()
    for entry in entries:
        if entry.get("kind") == "recovery":
            superseded.update(entry.get("supersedes") or [])
    return [e for e in entries if e.get("kind") != "recovery" and e.get("seq") not in superseded]


def placement(
    kind: str, path: str | None, attempt: int | None, step_path: str, step_status: str
) -> tuple[str, str, int, str]:
    """An entry's key without its occurrence number (the one rule for documents and heads)."""
    if kind == "step":
        return (kind, step_path, 0, step_status)
    if kind == "conclude":
        return (kind, "", 0, "")  # its path is compared, not aligned on
    return (kind, path or "", attempt or 0, "")


def _base_key(entry: Mapping[str, Any]) -> tuple[str, str, int, str]:
    step = entry.get("step") or {}
    return placement(
        str(entry.get("kind")),
        str(entry.get("path") or ""),
        int(entry.get("attempt") or 0),
        str(step.get("path", "")),
        str(step.get("status", "")),
    )


def keys_of(entries: Iterable[Mapping[str, Any]]) -> list[Key]:
    """Alignment keys of ``entries`` (active entries in order), unique by construction."""
    seen: dict[tuple[str, str, int, str], int] = {}
    keys: list[Key] = []
    for entry in entries:
        base = _base_key(entry)
        n = seen.get(base, 0)
        seen[base] = n + 1
        keys.append((*base, n))
    return keys


def key_of(entry: Mapping[str, Any], n: int = 0) -> Key:
    """The key of one entry that is the ``n``th of its kind, path, attempt and phase."""
    return (*_base_key(entry), n)


def entry_path(entry: Mapping[str, Any]) -> str | None:
    """The step path an entry is about; None for start and conclude without a path."""
    if entry.get("kind") == "step":
        return (entry.get("step") or {}).get("path")
    path = entry.get("path")
    return path if isinstance(path, str) else None


#: The ``x-`` members that say when something was recorded: they differ between any two
#: runs, so neither a diff, the Replayer nor a golden baseline compares them.
TIME_MEMBERS: Final = frozenset({"x-at", "x-started-at", "x-ended-at", "x-updated-at"})
_ENTRY_VARIES: Final = TIME_MEMBERS | {"seq", "generation"}
_STEP_VARIES: Final = TIME_MEMBERS | {"generation"}


def comparable(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry without what varies between runs (seq, generations, child run id, times)."""
    out = {k: v for k, v in entry.items() if k not in _ENTRY_VARIES}
    if out.get("kind") == "child":
        out.pop("child", None)
    step = out.get("step")
    if isinstance(step, dict):
        out["step"] = without_varying(step)
    return out


def without_varying(step: Mapping[str, Any]) -> dict[str, Any]:
    """A step record without its generation and its times."""
    return {k: v for k, v in step.items() if k not in _STEP_VARIES}
