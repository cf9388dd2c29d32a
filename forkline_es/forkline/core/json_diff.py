"""Forkline's JSON diff format: an ordered list of ``add``/``remove``/``replace`` operations.

The order is part of the format (callers compare patches as lists): in a map, removed keys,
then added keys, then the common keys recursed, each group sorted; in a list, the common
positions first, then the tail removed or added. An int and a float are one kind (``1`` and
``1.0`` are equal); any other change of kind replaces the node whole. Paths read
``$.key[2].other``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["json_diff"]

Patch = list[dict[str, Any]]


def json_diff(old: Any, new: Any, path: str = "$") -> Patch:
    """The operations that turn ``old`` into ``new`` (empty when they are equal)."""
    ops: Patch = []
    _walk(old, new, path, ops)
    return ops


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float)


def _walk(old: Any, new: Any, path: str, ops: Patch) -> None:
    if old is None and new is None:
        return
    if type(old) is not type(new):
        if not (_numeric(old) and _numeric(new)) or old != new:
            ops.append({"op": "replace", "path": path, "old": old, "new": new})
        return
    if isinstance(old, dict):
        gone = sorted(old.keys() - new.keys())
        came = sorted(new.keys() - old.keys())
        ops.extend({"op": "remove", "path": f"{path}.{k}", "old": old[k]} for k in gone)
        ops.extend({"op": "add", "path": f"{path}.{k}", "value": new[k]} for k in came)
        for k in sorted(old.keys() & new.keys()):
            _walk(old[k], new[k], f"{path}.{k}", ops)
        return
    if isinstance(old, list):
        for i, (a, b) in enumerate(zip(old, new, strict=False)):
            _walk(a, b, f"{path}[{i}]", ops)
        ops.extend({"op": "remove", "path": f"{path}[{i}]", "old": old[i]} for i in range(len(new), len(old)))
        ops.extend({"op": "add", "path": f"{path}[{i}]", "value": new[i]} for i in range(len(old), len(new)))
        return
    if old != new:
        ops.append({"op": "replace", "path": path, "old": old, "new": new})
