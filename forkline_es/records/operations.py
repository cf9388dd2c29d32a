"""List runs, get a run record, get a step record: each one read transaction, with 002's refusals."""

from __future__ import annotations

from typing import Any, Final, Protocol

import msgspec

from forkline_es.errors import InvalidRequest, RunNotFound, RunNotRetained, StepNotFound
from forkline_es.log.backend import Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.paths import path_problem
from forkline_es.projections import versions
from forkline_es.projections.model import RunSummary
from forkline_es.projections.runner import Projections
from forkline_es.recording.state import check_text
from forkline_es.records import stored
from forkline_es.records.cache import DocumentCache
from forkline_es.records.documents import (
    decode_document,
    document_text,
    finish,
    referenced_values,
)
from forkline_es.vocabulary import TERMINAL_OUTCOMES

__all__ = ["export_run_record", "get_run_record", "get_step_record", "log_events"]


class Host(Protocol):
    """What these reads ask of the store (``store.Store``, above this package)."""

    @property
    def path(self) -> str: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def projections(self) -> Projections: ...

    @property
    def documents(self) -> DocumentCache: ...


def _summary_or_refuse(store: Host, cur: Cursor, run_id: str) -> RunSummary:
    check_text(run_id, "a run identifier")
    summary = store.projections.persist.load_summary(cur, run_id)
    if summary is not None:
        return summary
    evicted = store.log.eviction(run_id, cur)
    if evicted is not None:
        at, reason, _ = evicted
        raise RunNotRetained(
            f"run {run_id!r} was evicted at {at} ({reason}); its record is no longer retained"
        )
    raise RunNotFound(f"no run {run_id!r} in {store.path}; `forkline-es runs` lists the runs it holds")


_LAST_ROW: Final = "SELECT seq, digest, position FROM log WHERE run_id = ? ORDER BY seq DESC LIMIT 1"


def _text(store: Host, run_id: str) -> bytes:
    """The run's canonical document text in UTF-8 (a decode reads bytes faster than a str,
    and an export returns them: no 12 MB copy for either). A concluded run's comes from the in-process cache
    (``records.cache``) while its last log position is the one the text was built at, else
    from the stored text (``records.stored``) while its last row is the one that was built
    at; a text built here is stored then, after the read's snapshot, in its own transaction."""
    with store.log.snapshot() as cur:
        summary = _summary_or_refuse(store, cur, run_id)
        if summary.status not in TERMINAL_OUTCOMES:
            return document_text(cur, store.projections.persist, summary).encode()
        rows = cur.execute(_LAST_ROW, (run_id,)).fetchall()
        if not rows:  # a concluded summary with no row: only a projection out of step
            return document_text(cur, store.projections.persist, summary).encode()
        last: stored.Last = (int(rows[0][0]), str(rows[0][1]), int(rows[0][2]))
        text = store.documents.get(run_id, last[2])
        if text is not None:
            return text
        format = versions.key_of(store.projections.versions)
        text, unusable = stored.load(cur, run_id, last, format)
        built = text is None
        if text is None:
            text = document_text(cur, store.projections.persist, summary).encode()
    store.documents.put(run_id, last[2], text)
    if built:
        stored.save(store.log, run_id, last, format, text, unusable)
    return text


def get_run_record(store: Host, run_id: str) -> dict[str, Any]:
    return decode_document(_text(store, run_id))


def export_run_record(store: Host, run_id: str) -> bytes:
    return _text(store, run_id)


def get_step_record(store: Host, run_id: str, path: str) -> dict[str, Any]:
    problem = path_problem(path)
    if problem is not None:
        raise InvalidRequest(f"malformed step path: {problem}")
    with store.log.snapshot() as cur:
        _summary_or_refuse(store, cur, run_id)
        doc = store.projections.persist.step_doc(cur, run_id, path)
        if doc is None:
            raise StepNotFound(f"run {run_id!r} has no occurrence of step {path!r}")
        return decode_document(finish(doc, referenced_values(cur, run_id, doc, store.log.dialect)))


def log_events(store: Host, run_id: str) -> list[dict[str, Any]]:
    """The run's raw log rows in seq order (bodies decoded, payload values left out), one snapshot."""
    with store.log.snapshot() as cur:
        _summary_or_refuse(store, cur, run_id)
        return [
            {
                "position": row.position,
                "seq": row.seq,
                "entry": row.entry,
                "generation": row.generation,
                "kind": row.kind,
                "at": row.at,
                "key": row.key,
                "body": msgspec.json.decode(row.body),
                "digest": row.digest,
            }
            for row in store.log.read_run(run_id, cur)
        ]
