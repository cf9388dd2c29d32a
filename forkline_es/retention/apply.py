"""Applying retention to a store: payload removal, eviction, tombstone purge and gc.

Every change to one run is one transaction. Payload removal appends a
``payloads-removed`` event to the run's own stream (hash chain and seq kept), folds it
into the projections and deletes exactly the values it names. Eviction first records
the run in the store-level ``eviction`` stream, then deletes the run's payload values,
log rows and rows of every projection table; the log's triggers allow exactly these
deletes and no others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NoReturn, Protocol

from forkline_es._logging import get_logger
from forkline_es.artifacts.store import ArtifactFiles
from forkline_es.errors import Conflict, InvalidRequest, RunNotFound, RunNotRetained, shown
from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import PayloadsRemoved, encode_body, kind_of
from forkline_es.log.rows import NewRow, row_digest
from forkline_es.log.schema import SLOTS_PER_EVENT, payload_ids
from forkline_es.projections import versions
from forkline_es.projections.runner import Projections
from forkline_es.recording.payloads import SLOT_CLASS
from forkline_es.recording.state import check_text
from forkline_es.retention.feed import acknowledged_through, unacknowledged_by
from forkline_es.retention.policy import (
    Kept,
    RetentionPolicy,
    RunFacts,
    before,
    parse_duration,
    plan_retention,
)
from forkline_es.values import is_text, utc_now
from forkline_es.values._time import parse_instant
from forkline_es.vocabulary import TERMINAL_OUTCOMES

__all__ = [
    "EvictedRun",
    "GcReport",
    "ReducedRun",
    "RetentionReport",
    "apply_retention",
    "evict_run",
    "evictions",
    "gc",
    "purge_tombstones",
    "remove_payloads",
    "would_free",
]

_log = get_logger("forkline_es.retention")

Progress = Callable[[int, int], None]


class Host(Protocol):
    """What retention asks of the store (``store.Store``, above this package)."""

    @property
    def path(self) -> str: ...

    @property
    def backend(self) -> Backend: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def projections(self) -> Projections: ...

    @property
    def artifact_files(self) -> ArtifactFiles: ...

    @property
    def has_artifact_folder(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class EvictedRun:
    """A run whose record is gone; its tombstone (``eviction`` row) remains until purged."""

    run_id: str
    workflow: str
    reason: str
    events: int  # log rows deleted (in a dry run: that would be deleted)
    payloads: int  # payload values deleted


@dataclass(frozen=True, slots=True)
class ReducedRun:
    """A retained run whose payload values ``removed`` (``[position, slot]``) were deleted."""

    run_id: str
    removed: tuple[tuple[int, str], ...]


@dataclass(slots=True)
class RetentionReport:
    """What ``apply_retention`` removed and evicted (or would, when ``dry_run``)."""

    policy: str
    dry_run: bool
    evicted: list[EvictedRun] = field(default_factory=list)
    reduced: list[ReducedRun] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "dry_run": self.dry_run,
            "evicted": [asdict(e) for e in self.evicted],
            "reduced": [{"run_id": r.run_id, "removed": [list(p) for p in r.removed]} for r in self.reduced],
            "kept": [asdict(k) for k in self.kept],
        }


@dataclass(frozen=True, slots=True)
class GcReport:
    """What ``gc`` gave back, and what it could not do now and why.

    Sizes: pages in use, and bytes on disk (db + WAL) before and after. ``not_done`` says
    what is left for a later ``gc`` (e.g. the WAL was not emptied because a reader holds
    a snapshot, or a store without an artifact folder had no files to sweep); while it is
    not empty, removed values may still be in the database's free pages or its WAL
    (docs/retention.md, gc and deletion).
    """

    page_size: int
    pages_before: int
    pages_after: int
    file_bytes_before: int | None
    file_bytes_after: int | None
    artifact_files_removed: int = 0
    artifact_bytes_removed: int = 0
    #: what killed processes left (staging files in ``<db>.artifacts/tmp/``, check copies)
    leftover_files_removed: int = 0
    leftover_bytes_removed: int = 0
    free_pages: int = 0  # free pages still in the file after gc
    wal_truncated: bool = True
    not_done: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Everything was done: no free page left, the WAL emptied and the artifact files swept."""
        return not self.not_done

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["not_done"] = list(self.not_done)
        out["complete"] = self.complete
        return out


# -- reading the facts -------------------------------------------------------------------


def _facts(cur: Cursor) -> list[RunFacts]:
    concluded = dict(cur.execute("SELECT run_id, position FROM log WHERE kind = 'run-concluded'").fetchall())
    out = []
    for run_id, workflow, status, ended_at, parent in cur.execute(
        "SELECT run_id, workflow, status, ended_at, parent FROM run_summary"
    ):
        ended = parse_instant(ended_at) if ended_at is not None else None
        out.append(RunFacts(run_id, workflow, status, ended, parent, concluded.get(run_id)))
    return out


def _count(cur: Cursor, run_id: str) -> int:
    return int(cur.execute("SELECT count(*) FROM log WHERE run_id = ?", (run_id,)).fetchall()[0][0])


def _classes_match(slot: str, classes: frozenset[str] | None) -> bool:
    """Slots outside 002's table (a Forkline event's ``payload``) go only with 'all classes'."""
    return classes is None or SLOT_CLASS.get(slot) in classes


def _present(cur: Cursor, run_id: str, classes: frozenset[str] | None) -> list[tuple[int, str]]:
    rows = cur.execute(
        f"SELECT p.position, p.slot FROM log AS l JOIN payload AS p ON p.id {payload_ids('l.position')} "
        "WHERE l.run_id = ? ORDER BY p.position, p.slot",
        (run_id,),
    ).fetchall()
    return [(int(p), str(s)) for p, s in rows if _classes_match(s, classes)]


def _refuse_missing(store: Host, cur: Cursor, run_id: str) -> NoReturn:
    evicted = store.log.eviction(run_id, cur)
    if evicted is not None:
        raise RunNotRetained(f"run {run_id!r} was already evicted at {evicted[0]} ({evicted[1]})")
    raise RunNotFound(f"no run {run_id!r} in {store.path}; `forkline-es runs` lists the runs it holds")


def _status(cur: Cursor, run_id: str) -> tuple[str, str | None] | None:
    rows = cur.execute("SELECT status, parent FROM run_summary WHERE run_id = ?", (run_id,)).fetchall()
    return (rows[0][0], rows[0][1]) if rows else None


# -- payload removal ----------------------------------------------------------------------


def remove_payloads(
    store: Host,
    run_id: str,
    classes: frozenset[str] | None = None,
    policy: str = "manual",
    reason: str | None = None,
) -> tuple[tuple[int, str], ...]:
    """Remove the completed run's stored values of ``classes``; returns what was removed.

    One transaction: append ``payloads-removed`` naming the slots, fold it, delete them.
    """
    with store.log.snapshot() as cur:
        status = _status(cur, run_id)
        if status is None:
            _refuse_missing(store, cur, run_id)
        if status[0] not in TERMINAL_OUTCOMES:
            raise Conflict(f"run {run_id!r} is {status[0]}; payloads are removed only from completed runs")
        removed = _present(cur, run_id, classes)
        last = cur.execute(
            "SELECT seq, generation, digest FROM log WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
        ).fetchall()
    if not removed:
        return ()
    seq, generation, prev = last[0][0] + 1, last[0][1], last[0][2]
    event = PayloadsRemoved(removed=removed, policy=policy, reason=reason)
    body = encode_body(event)
    kind = kind_of(event)
    at = utc_now()
    key = f"payloads-removed:{seq}"
    digest = row_digest(run_id, seq, None, generation, kind, at, key, prev, body)
    row = NewRow(run_id, seq, None, generation, kind, at, key, body, digest, prev)

    def then(cur: Cursor) -> None:
        store.projections.apply(cur, row, event)
        for position, slot in removed:
            first = position * SLOTS_PER_EVENT
            gone = cur.execute(
                "DELETE FROM payload WHERE id BETWEEN ? AND ? AND slot = ? RETURNING id",
                (first, first + SLOTS_PER_EVENT - 1, slot),
            ).fetchall()
            if len(gone) != 1:  # another process removed it first: start again
                raise Conflict(f"run {run_id!r}: payload {slot} at {position} changed meanwhile; retry")
        # The stored texts hold the removed values: they go with them (a read builds anew).
        cur.execute("DELETE FROM record_text WHERE run_id = ?", (run_id,))

    try:
        store.log.append([row], then)
    finally:
        store.projections.forget(run_id)
    _log.info("payloads_removed", run_id=run_id, slots=len(removed), policy=policy)
    return tuple(removed)


# -- eviction -----------------------------------------------------------------------------


_run_tables: dict[tuple[str, ...], tuple[str, ...]] = {}
#: Each derived table's primary key columns (the same on every backend's schema).
_keys: dict[str, tuple[str, ...]] = {}


#: The rows an eviction deletes in one statement at most. Every connection deletes with
#: ``secure_delete`` on, so each page a DELETE changes is rewritten, and SQLite keeps each such
#: page's original in the statement journal (in memory: ``temp_store = MEMORY`` keeps deleted
#: values off temporary files) until the statement ends: one DELETE of a run's 100 MB of
#: payload values held 100 MB of memory. A chunk holds the pages of its rows: 10 MB over the
#: page cache for 256 values of 20 KB (measured), at worst 256 of the largest payload allowed.
EVICT_CHUNK: Final = 256


def _delete(
    cur: Cursor, table: str, where: str, run_id: str, key: tuple[str, ...] = (), select: str | None = None
) -> int:
    """Delete ``table``'s rows that ``where`` (one ``?``: the run id) finds, in the caller's
    transaction; how many. Given its ``key``, ``EVICT_CHUNK`` rows a statement, chosen by
    ``select`` (the keys, one ``?``) when a join finds them faster than ``where``: a short
    run takes one plain statement (a chunk's ``IN`` and ``LIMIT`` cost 5-14% of evicting
    3,000 runs of 100 events, paired)."""
    if not key:
        return len(cur.execute(f"DELETE FROM {table} WHERE {where} RETURNING 1", (run_id,)).fetchall())
    columns = ", ".join(key)
    chunk = f"{select or f'SELECT {columns} FROM {table} WHERE {where}'} LIMIT {EVICT_CHUNK}"
    delete = f"DELETE FROM {table} WHERE ({columns}) IN ({chunk}) RETURNING 1"
    total = 0
    while True:
        deleted = len(cur.execute(delete, (run_id,)).fetchall())
        total += deleted
        if deleted < EVICT_CHUNK:
            return total


def _projection_tables(store: Host, cur: Cursor) -> tuple[str, ...]:
    """The projection tables whose rows belong to a run: by their ``run_id`` column (no fold
    knows a log position, so a per-run row always names its run)."""
    tables = store.projections.tables
    known = _run_tables.get(tables)
    if known is None:
        known = _run_tables[tables] = tuple(t for t in tables if "run_id" in store.backend.columns(cur, t))
    return known


def _check_evictable(store: Host, cur: Cursor, run_id: str, force: bool) -> str:
    """The run's workflow, or a refusal saying why it must stay (before anything is written)."""
    rows = cur.execute(
        "SELECT workflow, status, parent FROM run_summary WHERE run_id = ?", (run_id,)
    ).fetchall()
    if not rows:
        if store.log.run_exists(run_id, cur):
            raise Conflict(f"run {run_id!r} has no summary yet; rebuild projections, then evict")
        _refuse_missing(store, cur, run_id)
    workflow, status, parent = rows[0]
    if status not in TERMINAL_OUTCOMES:
        raise Conflict(
            f"run {run_id!r} is {status}; only completed runs are evicted "
            "(conclude it, e.g. as 'stopped', first)"
        )
    if force:
        return str(workflow)
    concluded = cur.execute(
        "SELECT position FROM log WHERE run_id = ? AND kind = 'run-concluded'", (run_id,)
    ).fetchall()
    waiting = unacknowledged_by(cur, int(concluded[0][0])) if concluded else []
    if waiting:
        raise Conflict(
            f"run {run_id!r} is protected: consumer(s) {', '.join(waiting)} have not acknowledged its "
            "completion; acknowledge it, unregister the consumer, or pass force=True (--force)"
        )
    if parent is not None and _status(cur, parent) is not None:
        raise Conflict(
            f"run {run_id!r} is a child of the retained run {parent!r}; a call tree is evicted from its "
            "root down: evict the parent first, or pass force=True (--force)"
        )
    return str(workflow)


def evict_run(
    store: Host,
    run_id: str,
    reason: str,
    policy: str | None = None,
    force: bool = False,
) -> EvictedRun:
    """Record the eviction, then delete the run's events, values and projection rows; one transaction.

    Refuses (``conflict``) a non-terminal run, and, unless ``force``, a run that a
    registered consumer has not acknowledged or whose parent is retained.
    """
    check_text(run_id, "a run identifier")
    if not is_text(reason) or "\x00" in reason:
        raise InvalidRequest(
            f"an eviction needs a reason: a nonempty string saying why, without NUL, not {shown(reason)}"
        )
    try:
        with store.log.transaction("evict run") as cur:
            workflow = _check_evictable(store, cur, run_id, force)
            last, length = cur.execute(
                "SELECT max(position), max(seq) FROM log WHERE run_id = ?", (run_id,)
            ).fetchall()[0]
            if last is None:
                # Read retained a moment ago, its rows gone now: on PostgreSQL (READ COMMITTED)
                # another process's eviction committed in between. The run is evicted, as asked.
                raise RunNotRetained(
                    f"evict run: another process evicted run {run_id!r} meanwhile (its eviction is "
                    "recorded); nothing was written"
                )
            cur.execute(
                "INSERT INTO eviction (run_id, position, at, reason, policy) VALUES (?, ?, ?, ?, ?)",
                (run_id, last, utc_now(), reason, policy),
            )
            long = length > EVICT_CHUNK  # a short run: one plain statement a table
            values = (
                f"SELECT p.id FROM log AS l JOIN payload AS p ON p.id {payload_ids('l.position')} "
                "WHERE l.run_id = ?"
            )
            payloads = _delete(cur, "payload", f"id IN ({values})", run_id, ("id",) if long else (), values)
            events = _delete(cur, "log", "run_id = ?", run_id, ("position",) if long else ())
            # derived: they go with the run
            for table in (
                "run_checkpoint",
                "run_checkpoint_piece",
                "record_text",
                *_projection_tables(store, cur),
            ):
                if not long:  # no count needed: no RETURNING
                    cur.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
                    continue
                key = _keys.get(table)
                if key is None:
                    key = _keys[table] = store.backend.primary_key(cur, table)
                _delete(cur, table, "run_id = ?", run_id, key)
    finally:
        store.projections.forget(run_id)
    _log.info("run_evicted", run_id=run_id, reason=reason, policy=policy, events=events, forced=force)
    return EvictedRun(run_id, workflow, reason, events, payloads)


def evictions(store: Host) -> list[dict[str, Any]]:
    """The tombstones still kept: run id, last position, time, reason and policy."""
    with store.log.snapshot() as cur:
        return [
            {"run_id": r, "position": p, "at": at, "reason": why, "policy": pol}
            for r, p, at, why, pol in cur.execute(
                "SELECT run_id, position, at, reason, policy FROM eviction ORDER BY position"
            )
        ]


def purge_tombstones(store: Host, older_than: timedelta | str, now: datetime | None = None) -> int:
    """Delete eviction records older than ``older_than``; returns how many went.

    Afterwards lookups of those runs answer ``run-not-found``.
    """
    age = parse_duration(older_than, "older_than")
    cutoff = before(_now(now), age)
    with store.log.transaction("purge tombstones") as cur:
        old = [
            r for r, at in cur.execute("SELECT run_id, at FROM eviction").fetchall() if _before(at, cutoff)
        ]
        cur.executemany("DELETE FROM eviction WHERE run_id = ?", [(r,) for r in old])
    _log.info("tombstones_purged", count=len(old), older_than=str(age))
    return len(old)


def _before(at: str, cutoff: datetime) -> bool:
    instant = parse_instant(at)
    return instant is not None and instant < cutoff


def _now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise InvalidRequest(f"now is an aware datetime, not {now!r}")
    return now.astimezone(UTC)


# -- the policy as a whole ----------------------------------------------------------------


def apply_retention(
    store: Host,
    policy: RetentionPolicy,
    now: datetime | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RetentionReport:
    """Plan from one snapshot, then evict and reduce one run per transaction.

    A run whose situation changed since planning (a consumer registered, it was
    evicted elsewhere) is skipped and reported in ``kept``.
    """
    if not isinstance(policy, RetentionPolicy):
        raise InvalidRequest(f"policy is a forkline_es.RetentionPolicy, not {policy!r}")
    when = _now(now)
    text = policy.describe()
    with store.log.snapshot() as cur:
        plan = plan_retention(policy, _facts(cur), when, acknowledged_through(cur))
        dry = (
            [
                EvictedRun(
                    e.run_id,
                    e.workflow,
                    e.reason,
                    _count(cur, e.run_id),
                    len(_present(cur, e.run_id, None)),
                )
                for e in plan.evict
            ],
            [ReducedRun(r.run_id, tuple(_present(cur, r.run_id, r.classes))) for r in plan.reduce],
        )
    report = RetentionReport(text, dry_run, kept=list(plan.kept))
    if dry_run:
        report.evicted = dry[0]
        report.reduced = [r for r in dry[1] if r.removed]
        return report
    total, done = len(plan.evict) + len(plan.reduce), 0
    for e in plan.evict:
        try:
            report.evicted.append(evict_run(store, e.run_id, e.reason, text))
        except (Conflict, RunNotFound, RunNotRetained) as refused:
            report.kept.append(Kept(e.run_id, refused.message))
        done += 1
        if progress is not None:
            progress(done, total)
    for r in plan.reduce:
        try:
            removed = remove_payloads(store, r.run_id, r.classes, text, "retention policy")
        except (Conflict, RunNotFound, RunNotRetained) as refused:
            report.kept.append(Kept(r.run_id, refused.message))
            removed = ()
        if removed:
            report.reduced.append(ReducedRun(r.run_id, removed))
        done += 1
        if progress is not None:
            progress(done, total)
    _log.info("retention_applied", policy=text, evicted=len(report.evicted), reduced=len(report.reduced))
    return report


def would_free(store: Host, policy: RetentionPolicy, now: datetime | None = None) -> dict[str, Any]:
    """What applying ``policy`` now would take out of the database, from one snapshot:
    runs evicted (their events and payload values), values removed from retained runs,
    and the payload bytes of both. Writes nothing (a read-only store answers too)."""
    if not isinstance(policy, RetentionPolicy):
        raise InvalidRequest(f"policy is a forkline_es.RetentionPolicy, not {policy!r}")
    length = store.log.dialect.byte_length("p.value")
    evicted = events = values = size = 0
    with store.log.snapshot() as cur:
        plan = plan_retention(policy, _facts(cur), _now(now), acknowledged_through(cur))
        for e in plan.evict:
            evicted += 1
            events += _count(cur, e.run_id)
            for _, n, b in _value_sizes(cur, e.run_id, length):
                values, size = values + n, size + b
        reduced = 0
        for r in plan.reduce:
            taken = [
                (n, b)
                for slot, n, b in _value_sizes(cur, r.run_id, length)
                if _classes_match(slot, r.classes)
            ]
            reduced += bool(taken)
            values += sum(n for n, _ in taken)
            size += sum(b for _, b in taken)
    return {
        "policy": policy.describe(),
        "runs_evicted": evicted,
        "runs_reduced": reduced,
        "events": events,
        "payload_values": values,
        "payload_bytes": size,
        "kept": len(plan.kept),
    }


def _value_sizes(cur: Cursor, run_id: str, length: str) -> list[tuple[str, int, int]]:
    """(slot, values, bytes) of the run's present payload values."""
    rows = cur.execute(
        f"SELECT p.slot, count(*), sum({length}) FROM log AS l JOIN payload AS p "
        f"ON p.id {payload_ids('l.position')} WHERE l.run_id = ? GROUP BY p.slot",
        (run_id,),
    ).fetchall()
    return [(str(slot), int(n), int(b or 0)) for slot, n, b in rows]


# -- giving space back -------------------------------------------------------------------


def _sweep_leftovers(store: Host, grace_seconds: float) -> tuple[int, int]:
    """What killed processes left, older than ``grace_seconds``: staging files of
    ``add_artifact`` / ``record_manifest`` and the backend's own (``rebuild --check`` copies)."""
    staged = store.artifact_files.sweep_staging(grace_seconds) if store.has_artifact_folder else (0, 0)
    copies = store.backend.sweep_leftovers(grace_seconds)
    return staged[0] + copies[0], staged[1] + copies[1]


def _grace(seconds: object) -> float:
    """``artifact_grace_seconds`` checked before anything runs: a finite number >= 0."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise InvalidRequest(
            f"artifact_grace_seconds is a number of seconds (e.g. 3600), not {shown(seconds)}"
        )
    try:
        value = float(seconds)
    except OverflowError:  # an int too large for a float
        value = math.inf
    if not math.isfinite(value) or value < 0:
        raise InvalidRequest(
            f"artifact_grace_seconds is a finite number of seconds >= 0 (e.g. 3600), not {shown(seconds)}"
        )
    return value


#: Stored run record texts (``records.stored``) no read can take any more: of other projector
#: versions, or whose row is gone or no longer its run's last.
_STALE_TEXTS: Final = (
    "DELETE FROM record_text WHERE format <> ? OR NOT EXISTS (SELECT 1 FROM log AS l "
    "WHERE l.run_id = record_text.run_id AND l.seq = record_text.seq AND l.digest = record_text.digest) "
    "OR EXISTS (SELECT 1 FROM log AS l WHERE l.run_id = record_text.run_id AND l.seq > record_text.seq) "
    "RETURNING seq"
)


#: ``gc``'s word for a store without an artifact folder: the database part is done, the files are not.
_NO_FOLDER: Final = (
    "artifact files were not swept: this store has no artifact folder (give the one every "
    "host shares: forkline-es --artifacts FOLDER gc, or fe.Store.open(location, artifacts=FOLDER))"
)


def gc(store: Host, artifact_grace_seconds: float = 3600.0, progress: Progress | None = None) -> GcReport:
    """Give free pages back to the file system (incremental vacuum in short steps), empty
    the WAL, then delete artifact files that no retained run references any more.

    While it runs, appends wait at most a fraction of a second at a time. What could not
    be done now (a reader holding a snapshot keeps the WAL) is in the report's
    ``not_done``; a driver error leaves as ``StoreError``. ``progress`` hears (pages
    given back, free pages at the start) as the vacuum goes.
    """
    grace = _grace(artifact_grace_seconds)
    with store.log.transaction("gc: delete stale run record texts", maintenance=True) as cur:
        key = versions.key_of(store.projections.versions)
        texts = len(cur.execute(_STALE_TEXTS, (key,)).fetchall())
    space = store.backend.reclaim(progress)
    with store.log.snapshot() as cur:
        referenced = {p for (p,) in cur.execute("SELECT path FROM artifact")}
        referenced |= {p for (p,) in cur.execute("SELECT path FROM manifest WHERE path IS NOT NULL")}
    not_done = space.not_done
    if store.has_artifact_folder:
        files, removed = store.artifact_files.sweep(referenced, grace)
    else:
        files = removed = 0
        not_done += (_NO_FOLDER,)
    left_files, left_bytes = _sweep_leftovers(store, grace)
    _log.info(
        "gc",
        pages_before=space.pages_before,
        pages_after=space.pages_after,
        artifact_files_removed=files,
        record_texts_removed=texts,
        not_done=len(not_done),
    )
    return GcReport(
        page_size=space.page_size,
        pages_before=space.pages_before,
        pages_after=space.pages_after,
        file_bytes_before=space.bytes_before,
        file_bytes_after=space.bytes_after,
        artifact_files_removed=files,
        artifact_bytes_removed=removed,
        leftover_files_removed=left_files,
        leftover_bytes_removed=left_bytes,
        free_pages=space.free_pages,
        wal_truncated=space.wal_truncated,
        not_done=not_done,
    )
