"""Forkline's run artifact (schema 1.0): a run and its events as one JSON document.

``RunRecorder.load_artifact`` builds it from the engine's log; ``to_json`` writes the same
layout Forkline exports (sorted keys, optional members omitted when empty), so files made
by either tool load in the other. Unknown members are ignored on load, as in Forkline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "KNOWN_EVENT_TYPES",
    "ArtifactEvent",
    "RunArtifact",
    "SchemaVersionError",
]

CURRENT_SCHEMA_VERSION: Final = "1.0"
KNOWN_EVENT_TYPES: Final = frozenset({"input", "output", "tool_call", "system"})

_NO_VERSION: Final = (
    "Artifact is missing required field 'schema_version'. Cannot load artifacts without explicit "
    "version information. This artifact may predate schema versioning."
)


class SchemaVersionError(Exception):
    """An artifact without ``schema_version``, or one no migration leads from."""

    def __init__(self, message: str, version: str | None = None) -> None:
        super().__init__(message)
        self.version = version


@dataclass(frozen=True)
class ArtifactEvent:
    event_id: int
    run_id: str
    ts: str
    type: str
    payload: Any = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "run_id": self.run_id,
            "ts": self.ts,
            "type": self.type,
            "payload": self.payload,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArtifactEvent:
        return cls(
            event_id=data.get("event_id", 0),
            run_id=data.get("run_id", ""),
            ts=data.get("ts", ""),
            type=data.get("type", "system"),
            payload=data.get("payload", {}),
        )


@dataclass(frozen=True)
class RunArtifact:
    schema_version: str
    run_id: str
    entrypoint: str
    started_at: str
    ended_at: str | None = None
    status: str | None = None
    forkline_version: str | None = None
    events: list[ArtifactEvent] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "run_id": self.run_id,
            "entrypoint": self.entrypoint,
            "started_at": self.started_at,
        }
        for name in ("ended_at", "status", "forkline_version"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["events"] = [e.to_dict() for e in self.events]
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunArtifact:
        version = data.get("schema_version")
        if version is None:
            raise SchemaVersionError(_NO_VERSION, version=None)
        return cls(
            schema_version=str(version),
            run_id=data.get("run_id", ""),
            entrypoint=data.get("entrypoint", ""),
            started_at=data.get("started_at", ""),
            ended_at=data.get("ended_at"),
            status=data.get("status"),
            forkline_version=data.get("forkline_version"),
            events=[ArtifactEvent.from_dict(e) for e in data.get("events", [])],
            metadata=data.get("metadata", {}),
        )

    @classmethod
    def from_json(cls, json_str: str) -> RunArtifact:
        return cls.from_dict(json.loads(json_str))

    def validate(self) -> list[str]:
        """Structural problems, one message each; empty when the artifact is well formed."""
        errors = [
            f"{name} is required and must be non-empty"
            for name in ("schema_version", "run_id", "entrypoint", "started_at")
            if not getattr(self, name)
        ]
        for i, event in enumerate(self.events):
            errors += [
                f"events[{i}].{name} is required"
                for name in ("run_id", "ts", "type")
                if not getattr(event, name)
            ]
        return errors
