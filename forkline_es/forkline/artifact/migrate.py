"""Artifact migrations: a chain of pure ``dict -> dict`` steps up to the current schema.

``recording_v0`` (Forkline's first layout: environment at the top, ``created_at`` on
events) is migrated to 1.0. A newer version is passed through with a warning, as Forkline
does; a missing or unknown older one is a ``SchemaVersionError``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

from forkline_es.forkline.artifact.schema import CURRENT_SCHEMA_VERSION, SchemaVersionError

__all__ = ["MigrationFn", "migrate_artifact", "register_migration"]

MigrationFn = Callable[[dict[str, Any]], dict[str, Any]]

_steps: dict[tuple[str, str], MigrationFn] = {}
_order: list[str] = ["recording_v0", CURRENT_SCHEMA_VERSION]


def register_migration(from_version: str, to_version: str, fn: MigrationFn) -> None:
    """Add one step of the chain; each (from, to) pair is registered once."""
    if (from_version, to_version) in _steps:
        raise ValueError(f"Migration already registered: {from_version} -> {to_version}")
    _steps[(from_version, to_version)] = fn
    if from_version not in _order:
        at = _order.index(to_version) if to_version in _order else len(_order)
        _order.insert(at, from_version)
    if to_version not in _order:
        _order.append(to_version)


def _rank(version: str) -> tuple[int, ...]:
    if version.startswith("recording_v"):
        try:
            return (0, int(version.removeprefix("recording_v")))
        except ValueError:
            return (0, 0)
    try:
        return tuple(int(p) for p in version.split("."))
    except ValueError:
        return (0, 0)


def _path(from_version: str) -> list[tuple[str, str]]:
    if from_version not in _order:
        return []
    start, end = _order.index(from_version), _order.index(CURRENT_SCHEMA_VERSION)
    pairs = [(_order[i], _order[i + 1]) for i in range(start, end)]
    return pairs if all(p in _steps for p in pairs) else []


def migrate_artifact(raw_json: dict[str, Any]) -> dict[str, Any]:
    """A new dict in the current schema; ``raw_json`` itself is never changed."""
    if not isinstance(raw_json, dict):
        raise SchemaVersionError("Artifact must be a dict", version=None)
    version = raw_json.get("schema_version")
    if version is None:
        raise SchemaVersionError(
            "Artifact is missing required field 'schema_version'. Cannot migrate artifacts without "
            "explicit version information. This artifact may predate schema versioning.",
            version=None,
        )
    version = str(version)
    result = copy.deepcopy(raw_json)
    if version == CURRENT_SCHEMA_VERSION:
        return result
    if _rank(version) > _rank(CURRENT_SCHEMA_VERSION):
        warnings.warn(
            f"Artifact schema_version '{version}' is newer than the current version "
            f"'{CURRENT_SCHEMA_VERSION}'. Attempting best-effort parse. Unknown fields will be ignored.",
            UserWarning,
            stacklevel=2,
        )
        result["schema_version"] = version
        return result
    path = _path(version)
    if not path:
        raise SchemaVersionError(
            f"No migration path from schema_version '{version}' to '{CURRENT_SCHEMA_VERSION}'. "
            "This artifact format is not supported.",
            version=version,
        )
    for step in path:
        result = _steps[step](result)
        result["schema_version"] = step[1]
    return result


def _recording_v0_to_1_0(raw: dict[str, Any]) -> dict[str, Any]:
    """Environment fields move into ``metadata``; ``script`` becomes ``entrypoint``; events'
    ``created_at`` becomes ``ts``."""
    out = copy.deepcopy(raw)
    if "entrypoint" not in out and "script" in out:
        out["entrypoint"] = out.pop("script")
    metadata: dict[str, Any] = out.get("metadata", {})
    for name in ("python_version", "platform", "cwd"):
        if name in out:
            metadata[name] = out.pop(name)
    if metadata:
        out["metadata"] = metadata
    if "events" in out:
        events = []
        for event in out["events"]:
            moved = dict(event)
            if "created_at" in moved and "ts" not in moved:
                moved["ts"] = moved.pop("created_at")
            events.append(moved)
        out["events"] = events
    return out


register_migration("recording_v0", CURRENT_SCHEMA_VERSION, _recording_v0_to_1_0)
