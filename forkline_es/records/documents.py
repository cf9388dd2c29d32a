"""Assembling run record documents from the projection tables, values resolved.

Projection rows hold document fragments whose present slots carry a private reference
(``projections.render.REF``); here each reference becomes the stored typed value, or
state ``removed`` when retention deleted the value row. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from forkline_es.artifacts import sql as artifact_sql
from forkline_es.log.connection import Cursor
from forkline_es.projections.model import RunSummary
from forkline_es.projections.render import REF, render_slots, render_step, render_summary
from forkline_es.projections.sql import Persister

__all__ = ["EXTENSIONS", "build_document", "resolve_slots", "summary_of"]

_decode: Final = msgspec.json.decode
_step_dec: Final = msgspec.json.Decoder(type=list[Any])

Values = dict[tuple[int, str], str]

#: ``x-`` extensions of the document: name -> reader(cursor, run_id) -> value or None.
EXTENSIONS: dict[str, Callable[[Cursor, str], Any]] = {
    "x-artifacts": artifact_sql.read_artifacts,
    "x-manifest": artifact_sql.read_manifest,
    "x-observations": artifact_sql.read_observations,
}


def resolve_slots(slots: dict[str, Any], values: Values) -> dict[str, Any]:
    """Replace each private reference by ``value``, or mark the slot ``removed``."""
    for slot in slots.values():
        ref = slot.pop(REF, None)
        if ref is None:
            continue
        stored = values.get((ref[0], ref[1]))
        if stored is None:
            slot["state"] = "removed"
        else:
            slot["value"] = _decode(stored)
    return slots


def run_values(cur: Cursor, run_id: str) -> Values:
    """Every payload value still stored for the run's events."""
    return {
        (position, slot): value
        for position, slot, value in cur.execute(
            "SELECT p.position, p.slot, p.value FROM log AS l JOIN payload AS p ON p.position = l.position "
            "WHERE l.run_id = ?",
            (run_id,),
        )
    }


def summary_of(summary: RunSummary) -> dict[str, Any]:
    """A run summary as listed: no generation, no payloads (002)."""
    out: dict[str, Any] = {
        "id": summary.run_id,
        "workflow": summary.workflow,
        "status": summary.status,
        "started_at": summary.started_at,
        "dry_run": summary.dry_run,
        "parent": summary.parent,
    }
    if summary.name is not None:
        out["name"] = summary.name
    return out


def build_document(cur: Cursor, persist: Persister, summary: RunSummary) -> dict[str, Any]:
    """The whole run record document of one run, read through one cursor (one snapshot)."""
    run_id = summary.run_id
    values = run_values(cur, run_id)
    docs = [d for (d,) in cur.execute("SELECT doc FROM entry WHERE run_id = ? ORDER BY seq", (run_id,))]
    entries: list[dict[str, Any]] = _decode("[" + ",".join(docs) + "]") if docs else []
    for entry in entries:
        if "payloads" in entry:
            resolve_slots(entry["payloads"], values)
        step = entry.get("step")
        if step is not None:
            resolve_slots(step["payloads"], values)
    steps: dict[str, Any] = {}
    for view in persist.load_steps(cur, run_id):
        record = render_step(view)
        resolve_slots(record["payloads"], values)
        steps[view.path] = record
    document: dict[str, Any] = {
        "record": 1,
        "standard": summary.standard,
        "run": render_summary(summary),
        "steps": steps,
        "payloads": resolve_slots(render_slots(summary.slots), values),
        "entries": entries,
    }
    if summary.pins is not None:
        document["pins"] = dict(summary.pins)
    for name, reader in EXTENSIONS.items():
        value = reader(cur, run_id)
        if value is not None:
            document[name] = value
    return document
