"""The structural check of a run record document that enters the diff from outside a store.

A store's documents are well formed by construction; a baseline file, or a document a
caller builds, may not be. Unchecked, the diff fails deep inside (an ``AttributeError``
on ``{"entries": [1]}``) or, worse, diffs a wrong shape silently (``"supersedes": "x"``
supersedes nothing useful, a numeric ``child`` is compared by path only). The check covers
what the diff reads, nothing more: the full JSON schema (schema/run-record.schema.json)
needs ``jsonschema``, a test dependency only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from forkline_es.errors import InvalidRequest

__all__ = ["ENTRY_KINDS", "check_document"]

#: The entry kinds of a run record document (schema ``$defs/entry``).
ENTRY_KINDS: Final = ("start", "step", "invoke", "result", "child", "recovery", "conclude")

_HINT: Final = (
    "a run record document is what `store.get_run_record` returns or "
    "`forkline-es export RUN [--baseline]` prints"
)


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _got(container: Mapping[str, Any], member: str) -> str:
    """What stands where ``member`` was expected: "got int", or "it is missing"."""
    return f"got {_type(container[member])}" if member in container else "it is missing"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _slots_problem(slots: Any) -> str | None:
    if not isinstance(slots, Mapping):
        return f"must be an object of payload slots, got {_type(slots)}"
    for name, slot in slots.items():
        if not isinstance(slot, Mapping) or not isinstance(slot.get("state"), str):
            return f"slot {name!r} must be an object with a string `state`"
    return None


def _entry_problem(entry: Any) -> tuple[str, str] | None:
    """(member, what is wrong) for the first member of ``entry`` the diff cannot read."""
    if not isinstance(entry, Mapping):
        return "", f"must be an object, got {_type(entry)}"
    kind = entry.get("kind")
    if kind not in ENTRY_KINDS:
        return ".kind", f"{kind!r} is not an entry kind ({', '.join(ENTRY_KINDS)})"
    if not _is_int(entry.get("seq")):
        return ".seq", f"must be an integer, {_got(entry, 'seq')}"
    if "payloads" in entry and (problem := _slots_problem(entry["payloads"])):
        return ".payloads", problem
    path = entry.get("path")
    if kind in ("invoke", "result", "child") and not isinstance(path, str):
        return ".path", f"must be a step path, {_got(entry, 'path')}"
    if kind == "conclude" and path is not None and not isinstance(path, str):
        return ".path", f"must be a step path when present, got {_type(path)}"
    if kind in ("invoke", "result") and not _is_int(entry.get("attempt")):
        return ".attempt", f"must be an integer, {_got(entry, 'attempt')}"
    if kind == "step":
        step = entry.get("step")
        if not isinstance(step, Mapping):
            return ".step", f"must be a step record object, {_got(entry, 'step')}"
        for member in ("path", "status"):
            if not isinstance(step.get(member), str):
                return f".step.{member}", f"must be a string, {_got(step, member)}"
        if "payloads" in step and (problem := _slots_problem(step["payloads"])):
            return ".step.payloads", problem
    if kind == "recovery":
        supersedes = entry.get("supersedes")
        if not isinstance(supersedes, list) or not all(_is_int(s) for s in supersedes):
            return ".supersedes", f"must be a list of entry seqs, {_got(entry, 'supersedes')}"
    if kind == "child" and "child" in entry and not isinstance(entry["child"], (str, Mapping)):
        return ".child", f"must be a run id or an embedded child document, got {_type(entry['child'])}"
    return None


def check_document(document: Any, where: str, depth: int) -> Mapping[str, Any]:
    """Return ``document`` once checked; raise ``InvalidRequest`` naming the first member
    the diff cannot read.

    ``where`` names the document in the message (``"baseline 'run.golden.json'"``).
    Embedded child documents (a baseline's ``child`` members) are checked too, ``depth``
    levels down: as deep as the diff compares children.
    """
    _check(document, where, depth, "")
    return cast("Mapping[str, Any]", document)


def _check(document: Any, where: str, depth: int, at: str) -> None:
    def refuse(member: str, problem: str) -> InvalidRequest:
        named = f" `{at}{member}`" if at or member else ""
        return InvalidRequest(f"{where} is not a run record document:{named} {problem}; {_HINT}")

    if not isinstance(document, Mapping):
        raise refuse("", f"must be a JSON object, got {_type(document)}")
    if not isinstance(document.get("run"), Mapping):
        raise refuse("run", f"must be an object, {_got(document, 'run')}")
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise refuse("entries", f"must be a list, {_got(document, 'entries')}")
    for i, entry in enumerate(entries):
        problem = _entry_problem(entry)
        if problem is not None:
            raise refuse(f"entries[{i}]{problem[0]}", problem[1])
        child = entry.get("child")
        if isinstance(child, Mapping) and depth > 0:
            _check(child, where, depth - 1, f"{at}entries[{i}].child.")
