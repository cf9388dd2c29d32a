"""Projection state as frozen Structs: what a fold returns and what a persister stores."""

from __future__ import annotations

from typing import Any

import msgspec

from forkline_es.log.events import Slot

__all__ = ["RunSummary", "SlotRef", "StepView"]


class SlotRef(msgspec.Struct, frozen=True, array_like=True):
    """A payload slot as seen by a projection: the event holding its value (its seq in the
    run: a fold never needs the log position, which the database gives at commit), and its
    record."""

    seq: int
    slot: str
    recorded: Slot


class RunSummary(msgspec.Struct, frozen=True, omit_defaults=True):
    """The run-summaries read model: one per run, folded from the run's own events."""

    run_id: str
    workflow: str
    standard: str
    started_at: str
    name: str | None = None
    status: str = "active"
    dry_run: bool = False
    parent: str | None = None
    predecessor: str | None = None
    generation: int = 0
    code: str | None = None
    step: str | None = None
    reason: str | None = None
    ended_at: str | None = None
    pins: dict[str, str] | None = None
    env: dict[str, str] | None = None
    slots: dict[str, SlotRef] = {}
    labels: dict[str, str] | None = None


class StepView(msgspec.Struct, frozen=True, omit_defaults=True):
    """The current logical view of one step path (active entries only)."""

    path: str
    generation: int
    status: str = "active"
    outcome: str | None = None
    code: str | None = None
    #: the code the step's end gave itself, which a late result of an attempt cannot replace
    end_code: str | None = None
    branch: dict[str, Any] | None = None
    attempt: int | None = None
    #: the ``arguments`` recorded when the step began: reported when the latest attempt has none
    begun_arguments: SlotRef | None = None
    slots: dict[str, SlotRef] = {}
    #: when the occurrence began (its first event in ``generation``) and ended (its end's time)
    started_at: str | None = None
    ended_at: str | None = None
    #: the attempts invoked in ``generation`` (a recovery's superseded ones no longer count)
    attempts: int = 0
