"""Shared checks for the recording tests: log snapshots and whole-log integrity."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

import forkline_es as fe
from forkline_es.log.events import decode_body
from forkline_es.log.opening import open_backend
from forkline_es.log.rows import row_digest
from forkline_es.recording.state import RunState

ARTIFACT = "sha256:" + "ab" * 32


def snapshot(store: fe.Store) -> tuple[Any, ...]:
    """Every stored row of the log, payloads and core projections: equal means nothing was written."""
    conn = store.conn
    return tuple(
        tuple(conn.execute(sql).fetchall())
        for sql in (
            "SELECT * FROM log ORDER BY position",
            "SELECT * FROM payload ORDER BY position, slot",
            "SELECT * FROM entry ORDER BY run_id, entry",
            "SELECT * FROM run_summary ORDER BY run_id",
            "SELECT run_id, path, generation, status, outcome, state FROM step_view ORDER BY run_id, path",
        )
    )


def count(store: fe.Store) -> int:
    return int(store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0])


def check_integrity(db: str) -> dict[str, list[tuple[Any, ...]]]:
    """Assert what a crash must never leave behind; return each run's rows in seq order.

    Checked per run: seq consecutive from 1, entry numbers consecutive, hash chain
    (digest recomputed, prev linked), every present slot has its payload value with the
    recorded digest and no payload lacks a slot, and the entry projection matches the log.
    """
    backend = open_backend(db, read_only=True)  # a connection of its own, on either backend
    try:
        with backend.snapshot() as conn:
            rows = conn.execute(
                "SELECT position, run_id, seq, entry, generation, kind, at, key, body, digest, prev "
                "FROM log ORDER BY run_id, seq"
            ).fetchall()
            payloads = {(p, s): v for p, s, v in conn.execute("SELECT position, slot, value FROM payload")}
            docs = conn.execute("SELECT run_id, entry, doc FROM entry")
            entries = {(r, e): msgspec.json.decode(doc) for r, e, doc in docs}
    finally:
        backend.close()
    runs: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        runs.setdefault(row[1], []).append(row)
    seen_slots: set[tuple[int, str]] = set()
    entry_rows = 0
    for run_id, run_rows in runs.items():
        prev = None
        next_entry = 1
        for i, (position, rid, seq, entry, gen, kind, at, key, body, digest, link) in enumerate(run_rows):
            assert seq == i + 1, f"run {run_id}: seq {seq} at index {i}"
            assert link == prev, f"run {run_id}: chain broken at seq {seq}"
            assert digest == row_digest(rid, seq, entry, gen, kind, at, key, link, body)
            prev = digest
            if entry is not None:
                assert entry == next_entry, f"run {run_id}: entry {entry} where {next_entry} was due"
                next_entry += 1
                entry_rows += 1
                rendered = entries[(rid, entry)]
                assert (rendered["seq"], rendered["generation"]) == (entry, gen)
            event = decode_body(body)
            for slot, value in getattr(event, "slots", {}).items():
                if value.state == "present":
                    stored = payloads[(position, slot)]
                    assert "sha256:" + hashlib.sha256(stored.encode()).hexdigest() == value.digest
                    seen_slots.add((position, slot))
    assert set(payloads) == seen_slots, "payload values without a present slot"
    assert len(entries) == entry_rows, "entry projection rows without their log row"
    return runs


def unfinished_entries(store: fe.Store, run_id: str) -> list[int]:
    """Entries of steps that did not end and are not superseded yet."""
    record = store.get_run_record(run_id)
    superseded = {n for e in record["entries"] if e["kind"] == "recovery" for n in e["supersedes"]}
    ended = {p for p, s in record["steps"].items() if s["status"] == "ended"}
    out = []
    for e in record["entries"]:
        path = e.get("path") or e.get("step", {}).get("path")
        if path is not None and path not in ended and e["seq"] not in superseded:
            out.append(e["seq"])
    return out


def full_fold(store: fe.Store, run_id: str) -> RunState:
    """The state resume_run built before checkpoints: every row of the run folded."""
    state = RunState(run_id=run_id)
    with store.log.snapshot() as cur:
        state.fold(store.log.read_run(run_id, cur))
    return state


def columns(state: RunState) -> dict[str, Any]:
    """Every column and view of the state, as plain data."""
    keys, paths = state._keys, state._paths
    return {
        "scalars": (
            state.run_id,
            state.workflow,
            state.dry_run,
            state.seq,
            state.entries,
            state.generation,
            state.status,
            state.last_digest,
            state.concluded,
            state.manifest,
        ),
        "sets": (sorted(state.open_invokes), sorted(state.children), state.artifacts),
        "keys": ([keys.text(n) for n in range(len(keys))], keys.indexed),
        "rows": (bytes(state._digests), bytes(state._is_entry)),
        "entries": (bytes(state._kind), list(state._pid), list(state._attempt), bytes(state._superseded)),
        "generations": [state._generation_of(i) for i in range(len(state._kind))],
        "paths": [paths.text(n) for n in range(len(paths))],
        "per_path": (bytes(state._status), list(state._begun), list(state._max_attempt)),
        "facts": list(state.facts),
        "views": (dict(state.path_status), dict(state.begun_in), dict(state.max_attempt)),
        "path_entries": dict(state.path_entries),
        "in_flight": state.in_flight(),
        "seen": [state.seen(keys.text(n)) for n in range(len(keys)) if keys.text(n)],
        "found": [paths.find(paths.text(n)) for n in range(len(paths))],
    }
