"""Run summaries: a pure fold ``(summary, row, event) -> summary``."""

from __future__ import annotations

from msgspec.structs import replace

from forkline_es.log.events import (
    EventBody,
    Recovered,
    RunConcluded,
    RunHeld,
    RunResumed,
    RunStarted,
    RunSuspended,
)
from forkline_es.log.rows import RowHeader
from forkline_es.projections.model import RunSummary, SlotRef

__all__ = ["SUMMARY_EVENTS", "fold_summary"]

#: The events that change a summary; ``fold_summary`` returns any other unchanged.
SUMMARY_EVENTS = (RunStarted, RunSuspended, RunHeld, RunResumed, Recovered, RunConcluded)


def fold_summary(summary: RunSummary | None, row: RowHeader, event: EventBody) -> RunSummary | None:
    """The run's summary after ``event``; the same object when the event changes nothing."""
    if isinstance(event, RunStarted):
        return RunSummary(
            run_id=row.run_id,
            workflow=event.workflow,
            standard=event.standard,
            started_at=row.at,
            name=event.name,
            dry_run=event.dry_run,
            parent=event.parent,
            predecessor=event.predecessor,
            pins=event.pins,
            env=event.env,
            labels=event.labels,
            slots={k: SlotRef(row.seq, k, s) for k, s in event.slots.items()},
        )
    if summary is None:
        return None
    match event:  # every class matched here (and RunStarted) is in SUMMARY_EVENTS
        case RunSuspended():
            return replace(summary, status="suspended", reason=event.reason, code=None, step=None)
        case RunHeld():
            return replace(summary, status="held", code=event.code, step=event.step, reason=event.reason)
        case RunResumed():
            return replace(summary, status="active", code=None, step=None, reason=None)
        case Recovered():
            return replace(summary, generation=row.generation)
        case RunConcluded():
            slots = dict(summary.slots)
            slots.update({k: SlotRef(row.seq, k, s) for k, s in event.slots.items()})
            return replace(
                summary,
                status=event.status,
                code=event.code,
                step=event.path,
                reason=event.reason,
                ended_at=row.at,
                slots=slots,
            )
        case _:
            return summary
