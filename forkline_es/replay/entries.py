"""The entries a diff considers, their alignment keys, and what of them is compared.

A run's *active entries* are its ordered record entries minus the superseded ones (those
listed in any recovery entry's ``supersedes``) and minus the recovery entries themselves,
which only record a generation transition. Each active entry gets an alignment key
``(kind, path, rank, phase, n)``; ``n`` counts earlier active entries with the same
first four parts, so keys are unique within a run and the nth occurrence of a key pairs
with the nth on the other side. A ``conclude`` entry's key leaves its ``path`` out: a run
concludes once, so the two conclusions pair up and a different path is a ``conclusion``
divergence, not a missing and an extra entry.

Invokes and results are placed by what happened, not by their attempt number. For a step
that ended (in both runs, when two runs are diffed), its last active attempt is its
*final* attempt (rank 0, phase ``""``) and every earlier one a *retry* (rank = its order
among the step's active attempts, phase ``"retry"``), so a retry one run made and the
other did not is a skipped retry, and the final attempts still pair up. For a step still
unfinished, attempts are ranked by their order alone (phase ``""``). Recovery renumbers
attempts (the superseded attempt keeps its number), so numbers differ between two
faithful runs; ranks do not. The attempt number itself is still compared, as an
infrastructure difference.

What varies between two faithful executions of the same work is left out of the
comparison by position in the document, never by a field name inside a user value:
``seq`` and ``generation`` of every entry, ``step.generation``, and the child run id of a
``child`` entry (compared by the child's own record instead, see ``diff``). Time members
(``TIME_MEMBERS``) stay: ``diff`` compares them only when asked (``times``), as metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "RETRY",
    "TIME_MEMBERS",
    "Key",
    "Parts",
    "active_entries",
    "comparable",
    "ended_paths",
    "entry_path",
    "keys_from_parts",
    "keys_of",
    "parts_of",
    "without_varying",
]

#: (entry kind, step path or "", attempt rank or 0, step status or phase, occurrence number)
Key = tuple[str, str, int, str, int]

#: What places one entry: (kind, path, attempt, step path, step status).
Parts = tuple[str, str, int, str, str]

#: The phase of an invoke or result of an attempt that was followed by another one.
RETRY: Final = "retry"

_ATTEMPTS: Final = frozenset({"invoke", "result"})


def active_entries(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The document's entries still in consideration, in recorded order."""
    entries: list[dict[str, Any]] = list(document.get("entries") or [])
    superseded: set[int] = set()
    for entry in entries:
        if entry.get("kind") == "recovery":
            superseded.update(entry.get("supersedes") or [])
    return [e for e in entries if e.get("kind") != "recovery" and e.get("seq") not in superseded]


def parts_of(entry: Mapping[str, Any]) -> Parts:
    step = entry.get("step") or {}
    return (
        str(entry.get("kind")),
        str(entry.get("path") or ""),
        int(entry.get("attempt") or 0),
        str(step.get("path", "")),
        str(step.get("status", "")),
    )


def ended_paths(parts: Iterable[Parts]) -> set[str]:
    """The steps that ended among these active entries."""
    return {p[3] for p in parts if p[0] == "step" and p[4] == "ended"}


def keys_from_parts(parts: list[Parts], ended: set[str] | None = None) -> list[Key]:
    """Alignment keys of active entries given by their parts, unique by construction.

    ``ended``: the steps whose attempts are ranked final and retries (default: those that
    ended in this run; a diff passes the steps that ended in both runs). One pass over the
    invokes, one over every entry: a diff of 100,000-entry runs spends its time here.
    """
    if ended is None:
        ended = ended_paths(parts)
    attempts: dict[str, int] = {}  # path -> how many distinct active attempts it has
    order: dict[tuple[str, int], int] = {}  # (path, attempt number) -> its order, from 1
    for kind, path, attempt, _, _ in parts:
        if kind == "invoke" and (path, attempt) not in order:
            order[path, attempt] = attempts[path] = attempts.get(path, 0) + 1
    counts: dict[tuple[str, str, int, str], int] = {}
    keys: list[Key] = []
    append = keys.append
    for kind, path, attempt, step_path, step_status in parts:
        base: tuple[str, str, int, str]
        if kind == "step":
            base = (kind, step_path, 0, step_status)
        elif kind == "invoke" or kind == "result":
            rank = order.get((path, attempt))
            if rank is None:  # a result whose invoke is not active keeps its number
                base = (kind, path, attempt, "")
            elif path not in ended:
                base = (kind, path, rank, "")
            elif rank == attempts[path]:
                base = (kind, path, 0, "")  # the final attempt
            else:
                base = (kind, path, rank, RETRY)
        elif kind == "conclude":
            base = (kind, "", 0, "")  # its path is compared, not aligned on
        else:
            base = (kind, path, attempt, "")
        n = counts.get(base, 0)
        counts[base] = n + 1
        append((*base, n))
    return keys


def keys_of(entries: Iterable[Mapping[str, Any]]) -> list[Key]:
    """Alignment keys of ``entries`` (active entries in order), unique by construction."""
    return keys_from_parts([parts_of(e) for e in entries])


def entry_path(entry: Mapping[str, Any]) -> str | None:
    """The step path an entry is about; None for start and conclude without a path."""
    if entry.get("kind") == "step":
        return (entry.get("step") or {}).get("path")
    path = entry.get("path")
    return path if isinstance(path, str) else None


#: The ``x-`` members that say when something was recorded: they differ between any two
#: runs, so a golden baseline leaves them out and a diff compares them only when asked.
TIME_MEMBERS: Final = frozenset({"x-at", "x-started-at", "x-ended-at", "x-updated-at"})
_STEP_VARIES: Final = TIME_MEMBERS | {"generation"}
#: A step record's members that its entries decide: ``x-attempts`` counts the step's
#: invokes, whose differences are already retries or attempt numbers (one fact, one
#: divergence).
_STEP_DERIVED: Final = frozenset({"generation", "x-attempts"})


def comparable(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry without what varies between runs (seq, generations, child run id) or
    what other entries decide (a step's ``x-attempts``); its times stay, for ``diff`` to
    classify (``time``, compared only with ``times``)."""
    out = {k: v for k, v in entry.items() if k not in ("seq", "generation")}
    if out.get("kind") == "child":
        out.pop("child", None)
    step = out.get("step")
    if isinstance(step, dict):
        out["step"] = {k: v for k, v in step.items() if k not in _STEP_DERIVED}
    return out


def without_varying(step: Mapping[str, Any]) -> dict[str, Any]:
    """A step record without its generation and its times (what a baseline keeps)."""
    return {k: v for k, v in step.items() if k not in _STEP_VARIES}
