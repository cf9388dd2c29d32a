"""Document shapes (002, Run Record Document) rendered from projection state, values aside.

A present slot is rendered with a private ``"~": [position, slot]`` reference instead of
its value (``~`` sorts after every member name, so the reference is the last member of
the slot's canonical JSON and a value can take its place textually);
``records.documents`` resolves the reference against the payload table at read time
(``value`` when the row is there, state ``removed`` when retention took it).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from forkline_es.log.events import (
    ActionInvoked,
    ActionResult,
    ChildStarted,
    EventBody,
    Recovered,
    RunConcluded,
    RunStarted,
    StepBegun,
    StepEnded,
)
from forkline_es.log.rows import LogRow
from forkline_es.projections.model import RunSummary, SlotRef, StepView
from forkline_es.recording.payloads import SLOT_CLASS

__all__ = [
    "REF",
    "fragment",
    "render_entry",
    "render_listed",
    "render_slots",
    "render_step",
    "render_summary",
]

_fragment: Final = msgspec.json.Encoder(order="sorted")


def fragment(obj: Any) -> str:
    """Canonical JSON of a rendered fragment.

    Fragments hold only names, codes, reasons, integers, booleans and references, never a
    user float, so msgspec's sorted encoder is canonical here without the checking pass
    of ``values.canonical_json`` (whose rules it matches for those types).
    """
    return _fragment.encode(obj).decode()


#: The private member carrying a present slot's (position, slot) until it is resolved.
REF: Final = "~"


def render_slots(refs: dict[str, SlotRef]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, ref in refs.items():
        rec = ref.recorded
        slot: dict[str, Any] = {"class": SLOT_CLASS[name], "state": rec.state}
        if rec.suppressed is not None:
            slot["suppressed"] = rec.suppressed
        if rec.state == "present":
            slot[REF] = [ref.position, ref.slot]
        out[name] = slot
    return out


def _own_slots(row: LogRow, slots: dict[str, Any]) -> dict[str, Any]:
    return render_slots({k: SlotRef(row.position, k, s) for k, s in slots.items()})


def render_step(view: StepView) -> dict[str, Any]:
    record: dict[str, Any] = {
        "path": view.path,
        "generation": view.generation,
        "status": view.status,
        "payloads": render_slots(view.slots),
    }
    if view.status == "ended":
        record["outcome"] = view.outcome
    if view.code is not None:
        record["code"] = view.code
    if view.branch is not None:
        record["branch"] = view.branch
    return record


def render_listed(summary: RunSummary) -> dict[str, Any]:
    """A run summary as ``list_runs`` gives it: no generation, no payloads (002)."""
    run: dict[str, Any] = {
        "id": summary.run_id,
        "workflow": summary.workflow,
        "status": summary.status,
        "started_at": summary.started_at,
        "dry_run": summary.dry_run,
        "parent": summary.parent,
    }
    if summary.name is not None:
        run["name"] = summary.name
    return run


def render_summary(summary: RunSummary) -> dict[str, Any]:
    """The run member: the summary plus generation, and code/step/reason when supplied."""
    run = render_listed(summary)
    run["generation"] = summary.generation
    for member in ("code", "step", "reason", "predecessor"):
        value = getattr(summary, member)
        if value is not None:
            run[member] = value
    return run


def render_entry(row: LogRow, event: EventBody, view: StepView | None) -> dict[str, Any]:
    """One entry of the ordered projection; ``view`` is the step's view just after a step event."""
    entry: dict[str, Any] = {"seq": row.entry, "generation": row.generation}
    match event:
        case RunStarted():
            entry["kind"] = "start"
            if event.slots:
                entry["payloads"] = _own_slots(row, event.slots)
        case StepBegun() | StepEnded():
            assert view is not None
            entry["kind"] = "step"
            entry["step"] = render_step(view)  # the view just after this event: its record then
        case ActionInvoked():
            entry.update(
                kind="invoke",
                path=event.path,
                attempt=event.attempt,
                operation=event.operation,
                artifact=event.artifact,
                dispatch=event.dispatch,
            )
            if event.slots:
                entry["payloads"] = _own_slots(row, event.slots)
        case ActionResult():
            entry.update(kind="result", path=event.path, attempt=event.attempt, dispatch=event.dispatch)
            if event.code is not None:
                entry["code"] = event.code
            if event.slots:
                entry["payloads"] = _own_slots(row, event.slots)
        case ChildStarted():
            entry.update(kind="child", path=event.path, child=event.child)
        case Recovered():
            entry.update(kind="recovery", supersedes=event.supersedes)
        case RunConcluded():
            entry.update(kind="conclude", status=event.status)
            for member in ("path", "code", "reason"):
                value = getattr(event, member)
                if value is not None:
                    entry[member] = value
            if event.slots:
                entry["payloads"] = _own_slots(row, event.slots)
        case _:
            raise ValueError(f"{type(event).__name__} is not an entry")
    return entry
