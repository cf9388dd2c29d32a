"""List runs, get a run record, get a step record: each one read transaction, with 002's refusals."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from forkline_es.errors import InvalidRequest, RunNotFound, RunNotRetained, StepNotFound
from forkline_es.log.backend import Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.paths import path_problem
from forkline_es.projections.model import RunSummary
from forkline_es.projections.runner import Projections
from forkline_es.recording.state import check_text
from forkline_es.records.documents import (
    build_document,
    decode_document,
    document_bytes,
    finish,
    referenced_values,
)

__all__ = ["export_run_record", "get_run_record", "get_step_record", "log_events"]


class Host(Protocol):
    """What these reads ask of the store (``store.Store``, above this package)."""

    @property
    def path(self) -> str: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def projections(self) -> Projections: ...


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


def get_run_record(store: Host, run_id: str) -> dict[str, Any]:
    with store.log.snapshot() as cur:
        summary = _summary_or_refuse(store, cur, run_id)
        return build_document(cur, store.projections.persist, summary)


def export_run_record(store: Host, run_id: str) -> bytes:
    with store.log.snapshot() as cur:
        summary = _summary_or_refuse(store, cur, run_id)
        return document_bytes(cur, store.projections.persist, summary)


def get_step_record(store: Host, run_id: str, path: str) -> dict[str, Any]:
    problem = path_problem(path)
    if problem is not None:
        raise InvalidRequest(f"malformed step path: {problem}")
    with store.log.snapshot() as cur:
        _summary_or_refuse(store, cur, run_id)
        doc = store.projections.persist.step_doc(cur, run_id, path)
        if doc is None:
            raise StepNotFound(f"run {run_id!r} has no occurrence of step {path!r}")
        return decode_document(finish(doc, referenced_values(cur, doc, store.log.dialect)))


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
