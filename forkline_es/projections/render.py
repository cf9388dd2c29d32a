"""Document shapes (002, Run Record Document) rendered from projection state, values aside.

A present slot is rendered with a private ``"~": [seq, slot]`` reference instead of its
value: ``seq`` is the run's event holding it, never the log position, so that a fold can
render before the database has given its row one. ``~`` sorts after every member name, so
the reference is the last member of the slot's canonical JSON and a value can take its
place textually; ``records.documents`` resolves the reference through the log and the
payload table at read time (``value`` when the row is there, state ``removed`` when
retention took it).
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
from forkline_es.log.rows import RowHeader
from forkline_es.projections.model import RunSummary, SlotRef, StepView
from forkline_es.vocabulary import SLOT_CLASS

__all__ = [
    "REF",
    "entry_fragment",
    "fragment",
    "render_entry",
    "render_listed",
    "render_slots",
    "render_step",
    "render_summary",
    "step_fragment",
]

_fragment: Final = msgspec.json.Encoder(order="sorted")


def fragment(obj: Any) -> str:
    """Canonical JSON of a rendered fragment.

    Fragments hold only names, codes, reasons, integers, booleans and references, never a
    user float, so msgspec's sorted encoder is canonical here without the checking pass
    of ``values.canonical_json`` (whose rules it matches for those types).
    """
    return _fragment.encode(obj).decode()


#: The private member carrying a present slot's (seq, slot) until it is resolved.
REF: Final = "~"


def render_slots(refs: dict[str, SlotRef]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, ref in refs.items():
        rec = ref.recorded
        slot: dict[str, Any] = {"class": SLOT_CLASS[name], "state": rec.state}
        if rec.suppressed is not None:
            slot["suppressed"] = rec.suppressed
        if rec.state == "present":
            slot[REF] = [ref.seq, ref.slot]
        out[name] = slot
    return out


def _own_slots(row: RowHeader, slots: dict[str, Any]) -> dict[str, Any]:
    return render_slots({k: SlotRef(row.seq, k, s) for k, s in slots.items()})


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
    if view.started_at is not None:
        record["x-started-at"] = view.started_at
    if view.ended_at is not None and view.status == "ended":
        record["x-ended-at"] = view.ended_at
    record["x-attempts"] = view.attempts
    return record


def step_fragment(view: StepView) -> str:
    """Canonical JSON of a step record: the step view's ``doc`` and a step entry's ``step``."""
    return fragment(render_step(view))


def render_listed(summary: RunSummary, updated_at: str | None = None) -> dict[str, Any]:
    """A run summary as ``list_runs`` gives it: no generation, no payloads (002).

    ``updated_at``: the time of the run's last row (read with the summary, not folded into
    it, so that an append does not rewrite its run's summary row)."""
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
    if summary.labels:
        run["x-labels"] = summary.labels
    if updated_at is not None:
        run["x-updated-at"] = updated_at
    if summary.ended_at is not None:
        run["x-ended-at"] = summary.ended_at
    return run


def render_summary(summary: RunSummary, updated_at: str | None = None) -> dict[str, Any]:
    """The run member: the summary plus generation, and code/step/reason when supplied."""
    run = render_listed(summary, updated_at)
    run["generation"] = summary.generation
    for member in ("code", "step", "reason", "predecessor"):
        value = getattr(summary, member)
        if value is not None:
            run[member] = value
    return run


def entry_fragment(row: RowHeader, event: EventBody, step: str | None) -> str:
    """Canonical JSON of one entry; ``step`` is the step fragment of the view just after a
    step event (the step record then), which the runner has already rendered for the view.

    A step entry is spliced as text: its members (generation, kind, seq, step) are written
    in canonical order around the step record's own canonical JSON.
    """
    if isinstance(event, (StepBegun, StepEnded)):
        assert step is not None
        return (
            f'{{"generation":{row.generation},"kind":"step","seq":{row.entry},"step":{step},'
            f'"x-at":"{row.at}"}}'
        )
    return fragment(render_entry(row, event))


def render_entry(row: RowHeader, event: EventBody) -> dict[str, Any]:
    """One entry of the ordered projection, other than a step entry (``entry_fragment``)."""
    entry: dict[str, Any] = {"seq": row.entry, "generation": row.generation, "x-at": row.at}
    match event:
        case RunStarted():
            entry["kind"] = "start"
            if event.slots:
                entry["payloads"] = _own_slots(row, event.slots)
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
