"""Step views: a pure fold ``(view, row, event) -> view`` per step path.

Attempt-dependent slots (``arguments``, ``result``, ``details``) and the code describe
the latest attempt in the reported generation (002, Record Payloads). Only active
entries count: after a recovery the runner refolds the touched paths from
their remaining entries (``refold``), so a superseded entry leaves no trace in the view
while the entries projection still shows it. A step reused from an earlier generation
keeps that generation.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec.structs import replace

from forkline_es.log.events import (
    ActionInvoked,
    ActionResult,
    ChildStarted,
    EventBody,
    Slot,
    StepBegun,
    StepEnded,
)
from forkline_es.log.rows import RowHeader
from forkline_es.projections.model import SlotRef, StepView

__all__ = ["ENTRY_STEP_EVENTS", "STEP_EVENTS", "fold_step", "refold"]

STEP_EVENTS = (StepBegun, ActionInvoked, ActionResult, StepEnded, ChildStarted)
#: The step events whose entry is a ``step`` entry carrying the step record just after them.
ENTRY_STEP_EVENTS = (StepBegun, StepEnded)

_ATTEMPT_SLOTS = ("arguments", "result", "details")


def _refs(row: RowHeader, slots: dict[str, Slot]) -> dict[str, SlotRef]:
    return {k: SlotRef(row.seq, k, s) for k, s in slots.items()}


def _ended_code(outcome: str | None, own: str | None, latest: str | None) -> str | None:
    """The code that applies once a step ended: its own, else a failed outcome's last attempt's.

    A code classified for a failed attempt does not describe a step that then succeeded
    (or was skipped or cancelled), and a late result cannot replace the step's own code.
    """
    if own is not None:
        return own
    return latest if outcome == "failed" else None


def fold_step(view: StepView | None, row: RowHeader, event: EventBody) -> StepView | None:
    """The step view of ``event``'s path after it; None only if there never was one."""
    gen = row.generation
    match event:
        case StepBegun():
            # A begin in a later generation starts the occurrence afresh: earlier attempts
            # belong to another generation than the one the view reports.
            if view is None or view.generation != gen:
                base = StepView(event.path, gen, started_at=row.at)
            else:
                base = view
            own = _refs(row, event.slots)
            return replace(
                base, generation=gen, begun_arguments=own.get("arguments"), slots={**base.slots, **own}
            )
        case ActionInvoked():
            base = view or StepView(path=event.path, generation=gen, started_at=row.at)
            kept = {k: v for k, v in base.slots.items() if k not in _ATTEMPT_SLOTS}
            if base.begun_arguments is not None:
                kept["arguments"] = base.begun_arguments  # the step's own, not an earlier attempt's
            return replace(
                base,
                generation=gen,
                attempt=event.attempt,
                attempts=base.attempts + (event.attempt != base.attempt),
                code=None,
                slots={**kept, **_refs(row, event.slots)},
            )
        case ActionResult():
            if view is None or view.attempt != event.attempt:
                return view  # only the latest attempt's result describes the step
            ended = view.status == "ended"  # a late result: the step's outcome still rules
            return replace(
                view,
                generation=gen,
                code=_ended_code(view.outcome, view.end_code, event.code) if ended else event.code,
                slots={**view.slots, **_refs(row, event.slots)},
            )
        case StepEnded():
            base = view or StepView(path=event.path, generation=gen, started_at=row.at)
            return replace(
                base,
                generation=gen,
                status="ended",
                ended_at=row.at,
                outcome=event.outcome,
                code=_ended_code(event.outcome, event.code, base.code),
                end_code=event.code,
                branch=event.branch,
                slots={**base.slots, **_refs(row, event.slots)},
            )
        case ChildStarted():
            base = view or StepView(path=event.path, generation=gen, started_at=row.at)
            return replace(base, generation=gen)
        case _:
            return view


def refold(path_events: Iterable[tuple[RowHeader, EventBody]]) -> StepView | None:
    """A path's view from scratch, over its active events in seq order."""
    view: StepView | None = None
    for row, event in path_events:
        view = fold_step(view, row, event)
    return view
