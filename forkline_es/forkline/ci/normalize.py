"""Forkline's artifact normalization: what changes between two recordings of the same
behaviour (clocks, the machine, ids) replaced or removed, so that CI diffs see behaviour only."""

from __future__ import annotations

import copy
import json
from typing import Any, Final

__all__ = [
    "NORMALIZED_TIMESTAMP",
    "TIMESTAMP_FIELDS",
    "UNSTABLE_METADATA_FIELDS",
    "normalize_artifact",
    "normalize_artifact_json",
]

TIMESTAMP_FIELDS: Final = frozenset({"ts", "started_at", "ended_at", "created_at", "timestamp"})
UNSTABLE_METADATA_FIELDS: Final = frozenset({"python_version", "platform", "cwd"})
NORMALIZED_TIMESTAMP: Final = "2000-01-01T00:00:00+00:00"


def normalize_artifact(
    artifact: dict[str, Any],
    *,
    normalize_timestamps: bool = True,
    normalize_metadata: bool = True,
    normalize_ids: bool = False,
) -> dict[str, Any]:
    """A normalized copy (``artifact`` is not changed): every string under a timestamp key,
    at any depth, becomes ``NORMALIZED_TIMESTAMP``; the machine's metadata goes (and
    ``metadata`` with it once empty); ids become ``normalized-run-id`` and event positions
    when asked; events are ordered by ``event_id``."""
    out = copy.deepcopy(artifact)
    if normalize_timestamps:
        _clocks(out)
    if normalize_metadata and "metadata" in out:
        for name in UNSTABLE_METADATA_FIELDS:
            out["metadata"].pop(name, None)
        if not out["metadata"]:
            del out["metadata"]
    if normalize_ids:
        out["run_id"] = "normalized-run-id"
        for n, event in enumerate(out.get("events", [])):
            event["event_id"] = n
            event["run_id"] = "normalized-run-id"
    if "events" in out:
        out["events"] = sorted(out["events"], key=lambda e: e.get("event_id", 0))
    return out


def normalize_artifact_json(
    json_str: str,
    *,
    normalize_timestamps: bool = True,
    normalize_metadata: bool = True,
    normalize_ids: bool = False,
) -> str:
    """``normalize_artifact`` on JSON text, written back indented with sorted keys."""
    normalized = normalize_artifact(
        json.loads(json_str),
        normalize_timestamps=normalize_timestamps,
        normalize_metadata=normalize_metadata,
        normalize_ids=normalize_ids,
    )
    return json.dumps(normalized, indent=2, sort_keys=True, default=str)


def _clocks(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TIMESTAMP_FIELDS and isinstance(item, str):
                value[key] = NORMALIZED_TIMESTAMP
            else:
                _clocks(item)
    elif isinstance(value, list):
        for item in value:
            _clocks(item)
