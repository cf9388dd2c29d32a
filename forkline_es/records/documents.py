"""Assembling run record documents from the projection tables, values resolved.

Projection rows hold document fragments whose present slots carry a private reference
(``projections.render.REF``); here each reference becomes the stored typed value, or
state ``removed`` when retention deleted the value row. Nothing here writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, Final

from forkline_es._gc import gc_paused
from forkline_es.artifacts import sql as artifact_sql
from forkline_es.log.backend import Cursor, Dialect
from forkline_es.log.schema import payload_ids
from forkline_es.projections.model import RunSummary
from forkline_es.projections.render import REF, fragment, render_slots, render_summary
from forkline_es.projections.sql import Persister
from forkline_es.values import canonical_json, decode_json

__all__ = [
    "EXTENSIONS",
    "decode_document",
    "document_text",
    "finish",
    "referenced_values",
]

_decode: Final = decode_json  # payload values may hold integers of any size

#: ``<seq>,"<slot>"`` (a reference's text) -> ``,"value":<stored canonical typed value>}``
Values = dict[str, str]

#: ``x-`` extensions of the document: name -> reader(cursor, run_id) -> value or None.
EXTENSIONS: dict[str, Callable[[Cursor, str], Any]] = {
    "x-artifacts": artifact_sql.read_artifacts,
    "x-manifest": artifact_sql.read_manifest,
    "x-observations": artifact_sql.read_observations,
}


#: A present slot's reference, always the slot's last member (``REF`` sorts after every
#: name): ``,"~":[<seq>,"<slot>"]}``; the group is the reference's own text.
_REFERENCE: Final = re.compile(r',"' + re.escape(REF) + r'":\[(\d+,"[^"]+")\]\}')
_MARKER: Final = "~removed"
_REMOVED: Final = f',"{_MARKER}":true}}'


def resolve_text(text: str, values: Values) -> tuple[str, bool]:
    """Put each referenced value in place, textually; True when a value was removed.

    A reference becomes ``,"value":<stored canonical JSON>}``, which keeps the member
    order canonical (``value`` sorts after ``class``, ``state``, ``suppressed``). One
    regex split finds every reference (its text is the lookup key), so a 10,000-step
    document costs one pass and one lookup per slot. A removed value leaves a marker
    that ``_mark_removed`` turns into state ``removed``. (A reference cannot occur inside
    a JSON string: there its quotes would be escaped.)
    """
    parts = _REFERENCE.split(text)
    if len(parts) == 1:
        return text, False
    resolved = [values.get(ref, _REMOVED) for ref in parts[1::2]]
    parts[1::2] = resolved
    return "".join(parts), _REMOVED in resolved


def _slot_maps(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every payload inventory of a document or a step record, and nothing below them.

    A user's map may hold any key, ``~removed`` too, so the removal marker is looked for
    only in the slots themselves, never inside their values.
    """
    yield node.get("payloads", {})
    for step in node.get("steps", {}).values():
        yield step.get("payloads", {})
    for entry in node.get("entries", ()):
        yield entry.get("payloads", {})
        yield entry.get("step", {}).get("payloads", {})


def _mark_removed(node: dict[str, Any]) -> None:
    """Slots carrying the removal marker become state ``removed`` (rare: retention only)."""
    for slots in _slot_maps(node):
        for slot in slots.values():
            if slot.pop(_MARKER, None) is not None:
                slot["state"] = "removed"


def finish(text: str, values: Values) -> str:
    """Canonical JSON text of a document or a step record once its references are resolved."""
    resolved, removed = resolve_text(text, values)
    if not removed:
        return resolved
    with gc_paused():
        doc = _decode(resolved)
        _mark_removed(doc)
        return canonical_json(doc).decode()


#: From this many characters of JSON a decoded document goes straight to the oldest
#: generation (``forkline_es._gc``); a smaller one is a few thousand containers at most,
#: which one young collection walks in less time than the move costs.
PROMOTE_AT: Final = 1 << 16


def decode_document(text: str | bytes) -> dict[str, Any]:
    """A document (or step record) from its canonical text, for the caller to keep.

    Decoded from the text itself (encoding 9 MB first would only copy it), with the
    collector kept out: see ``forkline_es._gc``.
    """
    with gc_paused(keep=len(text) >= PROMOTE_AT):
        document: dict[str, Any] = _decode(text)
    return document


#: A ``payload AS p`` row of the event ``log AS l`` as a ``Values`` item: its reference's
#: text (the event's seq in its run, then the slot), its resolved text.
_VALUE_ITEM: Final = "l.seq || ',\"' || p.slot || '\"', ',\"value\":' || p.value || '}'"


def run_values(cur: Cursor, run_id: str) -> Values:
    """Every payload value still stored for the run's events (the log turns each event's seq,
    which the references name, into the payload table's key range)."""
    rows = cur.execute(
        f"SELECT {_VALUE_ITEM} FROM log AS l JOIN payload AS p ON p.id {payload_ids('l.position')} "
        "WHERE l.run_id = ?",
        (run_id,),
    )
    return dict(rows)


def referenced_values(cur: Cursor, run_id: str, text: str, dialect: Dialect) -> Values:
    """The stored values of the references in ``text`` only (a step record's few, not its
    run's): each referenced seq of ``run_id`` found through the log's (run_id, seq) key."""
    seqs = sorted({int(ref.split(",", 1)[0]) for ref in _REFERENCE.findall(text)})
    if not seqs:
        return {}
    rows = cur.execute(
        f"SELECT {_VALUE_ITEM} FROM {dialect.each('j')} JOIN log AS l ON l.run_id = ? AND l.seq = j.value "
        f"JOIN payload AS p ON p.id {payload_ids('l.position')}",
        (dialect.array(seqs), run_id),
    )
    return dict(rows)


def document_text(cur: Cursor, persist: Persister, summary: RunSummary) -> str:
    """Canonical JSON of the whole run record document, assembled from stored fragments.

    Members are written in canonical (sorted) order and each fragment is already
    canonical, so the bytes equal ``canonical_json`` of the decoded document without
    building it: reading a 10,000-step run stays a join of text, not 100,000 dicts.
    """
    run_id = summary.run_id
    values = run_values(cur, run_id)
    members: list[tuple[str, str]] = [
        ("entries", "[" + ",".join(persist.entry_docs(cur, run_id)) + "]"),
        ("payloads", fragment(render_slots(summary.slots))),
        ("record", "1"),
        ("run", canonical_json(render_summary(summary, persist.updated_at(cur, run_id))).decode()),
        ("standard", canonical_json(summary.standard).decode()),
        ("steps", "{" + ",".join(f'"{path}":{doc}' for path, doc in persist.step_docs(cur, run_id)) + "}"),
    ]
    if summary.pins is not None:
        members.append(("pins", canonical_json(summary.pins).decode()))
    for name, reader in EXTENSIONS.items():
        value = reader(cur, run_id)
        if value is not None:
            members.append((name, canonical_json(value).decode()))
    members.sort()
    text = "{" + ",".join(f'"{name}":{body}' for name, body in members) + "}"
    return finish(text, values)
