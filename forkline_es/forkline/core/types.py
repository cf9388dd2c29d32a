"""Forkline's step-store records: a run, its numbered steps, and the events of each step.

Frozen dataclasses, as in Forkline, built by ``SQLiteStore`` from the engine's log.
``event_id`` and ``step_id`` are log positions here (global, increasing), where Forkline
numbers each table on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Event", "Run", "Step"]


@dataclass(frozen=True)
class Event:
    event_id: int | None
    run_id: str
    step_idx: int
    type: str
    created_at: str
    payload: Any = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    step_id: int | None
    run_id: str
    idx: int
    name: str
    started_at: str
    ended_at: str | None = None
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class Run:
    run_id: str
    created_at: str
    steps: list[Step] = field(default_factory=list)
    forkline_version: str | None = None
    schema_version: str | None = None
