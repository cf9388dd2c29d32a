"""``fe.plain``: a document with its payload values as plain data instead of typed values.

The typed form (``{"kind": "map", "value": {...}}``) is the wire format: it keeps an
integer apart from a float and a timestamp apart from a string, and digests are taken
over it. Reading a record, one mostly wants the data: ``plain`` turns every present
slot's ``value`` into JSON data (null, booleans, numbers, strings, lists, maps), a
timestamp into its ``{"instant", "zone"}``, a duration into its milliseconds and a file
into its reference members. Maps keep their keys in code-point order, as stored.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Final

from forkline_es.errors import InvalidRequest, shown

__all__ = ["plain", "plain_value"]

_SCALARS: Final = frozenset({"null", "bool", "int", "float", "string", "timestamp", "duration", "file"})


def plain_value(typed: Any) -> Any:
    """The plain data of one typed value (see the module docstring)."""
    kind = typed["kind"]
    value = typed["value"]
    if kind in _SCALARS:
        return value
    if kind == "list":
        return [plain_value(v) for v in value]
    if kind == "map":
        return {k: plain_value(v) for k, v in value.items()}
    raise InvalidRequest(f"{shown(kind)} is not a kind of typed value")


def _slot_maps(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every payload inventory of a document, a step record or an entry, nothing below them."""
    yield node.get("payloads") or {}
    for step in (node.get("steps") or {}).values():
        yield step.get("payloads") or {}
    for entry in node.get("entries") or ():
        yield entry.get("payloads") or {}
        yield (entry.get("step") or {}).get("payloads") or {}


def plain(document: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``document`` (a run record, a step record or an entry) with every present
    payload value as plain data; ``document`` itself is left as it is."""
    if not isinstance(document, dict):
        raise InvalidRequest(
            f"plain takes a run record, step record or entry (a dict), not {shown(document)}"
        )
    out = copy.deepcopy(document)
    for slots in _slot_maps(out):
        for slot in slots.values():
            if isinstance(slot, dict) and slot.get("state") == "present" and "value" in slot:
                slot["value"] = plain_value(slot["value"])
    return out
