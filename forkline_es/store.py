"""The Store: one database, its log, its projections, and the operations over them.

``Store`` wires the pieces together and owns the one transaction each write uses; the
logic lives in the packages it calls: ``recording`` (checks and the Run handle),
``log`` (rows and SQL), ``projections`` (folds), ``records`` (documents).
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from forkline_es._logging import get_logger
from forkline_es._version import __version__
from forkline_es.artifacts import sql as artifact_sql
from forkline_es.artifacts.anchors import read_anchors
from forkline_es.artifacts.observations import MetricSummary
from forkline_es.artifacts.projectors import projectors as artifact_projectors
from forkline_es.compat.views import ForklineViews, import_hint, written_by_forkline
from forkline_es.errors import (
    Conflict,
    InvalidRequest,
    RunNotFound,
    RunNotRetained,
    StoreDamaged,
    StoreError,
    shown,
)
from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.connection import Durability
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import EventBody, RunStarted
from forkline_es.log.opening import open_backend
from forkline_es.log.rows import LogRow, NewRow
from forkline_es.projections.runner import Prepared, Projections, Projector
from forkline_es.recording import checkpoint
from forkline_es.recording.checkpoint import Saving
from forkline_es.recording.markers import MISSING
from forkline_es.recording.payloads import DEFAULT_MAX_PAYLOAD_BYTES, check_payload_limit, encode_slots
from forkline_es.recording.run import Run, logged_refusals
from forkline_es.recording.state import RunState, check_labels, check_text
from forkline_es.records.cache import DocumentCache
from forkline_es.redaction import RedactionPolicy, checked_policy
from forkline_es.values import is_digest, is_text, utc_now

if TYPE_CHECKING:  # imported in the methods that use them: not on the recording path
    from forkline_es.artifacts.store import ArtifactFiles
    from forkline_es.artifacts.verify import VerifyReport
    from forkline_es.retention import apply as retention
    from forkline_es.retention import feed
    from forkline_es.retention.policy import RetentionPolicy

__all__ = ["Store", "extra_projectors"]

_log = get_logger("forkline_es.store")

IsSensitive = Callable[[Any], bool]

F = TypeVar("F", bound=Callable[..., Any])


def extra_projectors() -> list[Projector]:
    """Fresh instances of every projector a store folds beside the core read models, in
    the order they fold: a capability with its own read model adds one here."""
    return [ForklineViews(), *artifact_projectors()]


def _writes(method: F) -> F:
    """A Store method that writes: refused on a store opened read-only, before it does anything."""

    @functools.wraps(method)
    def guarded(self: Store, *args: Any, **kwargs: Any) -> Any:
        if self.log.read_only:
            self.log.refuse_write(method.__name__)
        return method(self, *args, **kwargs)

    return guarded  # type: ignore[return-value]


def _reads(method: F) -> F:
    """A Store method that decodes what the store holds. A row or document that does not
    decode (text that is not UTF-8, a body that is not JSON or not an event) was damaged
    after it was written: ``StoreDamaged``, never the decoder's own exception."""

    @functools.wraps(method)
    def guarded(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (UnicodeDecodeError, msgspec.DecodeError) as e:
            raise StoreDamaged.undecodable(f"{method.__name__} on {self.path}", e) from None

    return guarded  # type: ignore[return-value]


def environment() -> dict[str, str]:
    """The environment snapshot recorded at run start (Forkline's, plus host and version)."""
    import platform  # here, not at import: about 3 ms of ``import forkline_es`` (issue 22)
    import socket

    return {
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "cwd": os.getcwd(),
        "hostname": socket.gethostname(),
        "forkline_es_version": __version__,
    }


def _taken(run_id: str) -> None:
    """A start under a taken id that is not a repeat of its start (same key, same event)."""
    raise Conflict(
        f"run id {run_id!r} is already taken by another run; choose another run_id "
        "(a repeated start must use the original start's idempotency key)"
    )


def _checked_path(path: object) -> str | os.PathLike[str]:
    """A database path as ``Store.open`` takes it: text naming a file, or ``":memory:"``."""
    text = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    if type(text) is not str:
        raise InvalidRequest(f"a store path is a str or os.PathLike naming a file, not {shown(path)}")
    if text == "" or "\x00" in text or not is_text(text):
        raise InvalidRequest(
            f"store path {shown(text)} names no file (empty, or a NUL or lone surrogate in it); "
            "pass a file name, or ':memory:' for a store in memory"
        )
    assert isinstance(path, str | os.PathLike)
    return path


class Store:
    """A forkline_es database. Open with ``Store.open(path)``; use as a context manager."""

    def __init__(
        self,
        backend: Backend,
        path: str,
        redaction: RedactionPolicy | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        self.path = path
        #: The longest payload this handle records, in bytes of canonical JSON (see ``open``).
        self.max_payload_bytes = check_payload_limit(max_payload_bytes)
        #: The storage seam (``log.backend``): every statement of this store goes through it.
        self.backend = backend
        self.log = EventLog(backend)
        self._artifacts: str | None = None
        self.projections = Projections(self.log, extra_projectors())
        #: Concluded runs' document texts, checked against the run's last position on each read.
        self.documents = DocumentCache()
        self.redaction = redaction
        self.is_sensitive: IsSensitive | None = redaction.is_sensitive if redaction is not None else None
        #: The time each recorded row gets (canonical UTC text); ``_recorded_at`` overrides it.
        self._now: Callable[[], str] = utc_now

    @contextlib.contextmanager
    def _recorded_at(self, at: str) -> Iterator[None]:
        """Rows recorded inside get ``at`` (canonical UTC) instead of now.

        The importer's hook (``compat.importer``): an imported run keeps its source's times.
        """
        self._now = lambda: at
        try:
            yield
        finally:
            self._now = utc_now

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = "runs.db",
        durability: Durability = "normal",
        redaction: RedactionPolicy | None = None,
        *,
        read_only: bool = False,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        artifacts: str | os.PathLike[str] | None = None,
    ) -> Store:
        """Open or create a store; refuses foreign or newer files with StoreError, untouched.

        ``redaction``: a ``RedactionPolicy``; a payload it finds sensitive is recorded as
        ``withheld`` and never reaches the disk. A runs.db that Forkline itself wrote is
        refused with the two commands that import it. ``max_payload_bytes``: the longest
        payload a recording call may store, in bytes of its canonical JSON (16 MiB by
        default); a longer one is refused with ``invalid-value`` and nothing is written.

        ``read_only``: open an existing store and write nothing, on a read-only file, folder
        or mount too; every write call raises StoreError (docs/records.md, "Reading a copy").

        ``path`` may be a PostgreSQL DSN (``postgresql://user@host/db``, the ``postgres``
        extra): the same store on a server that executors on many hosts share; its artifact
        files then go to ``artifacts``, a folder every host mounts (docs/postgres.md).
        """
        path = _checked_path(path)
        if type(read_only) is not bool:
            raise InvalidRequest(f"read_only must be True or False, not {shown(read_only)}")
        if durability not in ("normal", "full"):
            raise StoreError(f"durability must be 'normal' or 'full', not {shown(durability)}")
        check_payload_limit(max_payload_bytes)
        if redaction is not None:
            checked_policy(redaction, "redaction")  # before the file is created
        try:
            backend = open_backend(path, durability, read_only=read_only)
        except StoreError as e:
            if os.fspath(path) == ":memory:" or not written_by_forkline(os.fspath(path)):
                raise
            raise StoreError(import_hint(os.fspath(path))) from e
        store = cls(backend, backend.location, redaction, max_payload_bytes=max_payload_bytes)
        store._artifacts = None if artifacts is None else os.fspath(artifacts)
        try:
            store.projections.ensure()
        except BaseException:
            backend.close()
            raise
        return store

    @property
    def read_only(self) -> bool:
        """Opened with ``read_only=True``: every write call raises StoreError."""
        return self.log.read_only

    @property
    def conn(self) -> Any:
        """The driver's connection, for tests and tools (on SQLite replaced if another SQLite
        deleted its WAL: ``log.wal``); the packages above the seam never use it."""
        return self.backend.connection()

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- recording -------------------------------------------------------------------------

    @logged_refusals
    @_writes
    def start_run(
        self,
        workflow: str,
        standard: str = "1.0",
        name: str | None = None,
        inputs: Any = {},  # noqa: B006 - never mutated; an empty map is still an input payload
        trigger: Any = MISSING,
        dry_run: bool = False,
        parent: str | None = None,
        predecessor: str | None = None,
        pins: Mapping[str, str] | None = None,
        run_id: str | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        key: str | None = None,
    ) -> Run:
        """Record a run's start (entry 1, generation 0) and return its handle.

        ``labels``: string labels recorded once, with the start (``x-labels`` in the run
        summary; ``list_runs(labels=...)`` filters on them); they never change afterwards.

        Repeating an identical start with the same ``run_id`` returns a handle on the
        existing run; a different start under a taken id is a ``conflict``.
        """
        check_text(workflow, "workflow")
        check_text(standard, "standard")
        check_text(name, "name", optional=True)
        check_text(parent, "parent", optional=True)
        check_text(predecessor, "predecessor", optional=True)
        if type(dry_run) is not bool:
            raise InvalidRequest(f"dry_run must be True or False, not {shown(dry_run)}")
        checked_pins = self._check_pins(pins)
        checked_labels = check_labels(labels)
        rid = check_text(run_id, "run_id", optional=True) or uuid.uuid4().hex
        slots, payloads = encode_slots(
            {"inputs": inputs, "trigger": trigger},
            self.is_sensitive,
            dry_run=dry_run,
            limit=self.max_payload_bytes,
        )
        event = RunStarted(
            workflow=workflow,
            standard=standard,
            name=name,
            dry_run=dry_run,
            parent=parent,
            predecessor=predecessor,
            pins=checked_pins,
            env=environment(),
            slots=slots,
            labels=checked_labels,
        )
        return self._start(rid, event, payloads, "start" if key is None else key)

    def _start(self, rid: str, event: RunStarted, payloads: Sequence[tuple[str, bytes]], key: str) -> Run:
        """Record a checked start under ``key`` (an empty key is refused, not replaced)."""
        if self.log.eviction(rid) is not None:
            raise Conflict(f"run id {rid!r} belonged to an evicted run; identities are never reused")
        first = self._first_seq(rid)
        if first is not None and first != 1:
            raise Conflict(
                f"run id {rid!r} still has rows appended after its run was evicted (before schema "
                "version 5), whose eviction record is purged; verify reports them: choose another run_id"
            )
        if first == 1:
            run = self.resume_run(rid)
            run._record(event, key, payloads, lambda: _taken(rid))  # repeat or conflict
            return run
        run = Run(self, RunState(run_id=rid))
        run._record(event, key, payloads, lambda: None)
        _log.info(
            "run_started", run_id=rid, workflow=event.workflow, dry_run=event.dry_run, parent=event.parent
        )
        return run

    @staticmethod
    def _check_pins(pins: Mapping[str, str] | None) -> dict[str, str] | None:
        if pins is None:
            return None
        if not isinstance(pins, Mapping):
            raise InvalidRequest(f"pins is a map from artifact identity to digest, not {shown(pins)}")
        for k, v in pins.items():
            if not is_text(k) or "\x00" in k or not is_digest(v):
                raise InvalidRequest(
                    f"pin {shown(k)}: {shown(v)} is not 'sha256:' followed by 64 lower-case hex digits "
                    "under an artifact identity of Unicode text without NUL"
                )
        return dict(pins)

    def _first_seq(self, run_id: str) -> int | None:
        """The seq of the run's first row: 1, None when it has none, more for rows left
        behind by an eviction (appended after it before schema version 5)."""
        rows = list(self.log.read_run_from(run_id, 1, limit=1))
        return rows[0].seq if rows else None

    @_writes
    @_reads
    def resume_run(self, run_id: str) -> Run:
        """A handle at the run's current state and generation, from any process.

        An evicted run is ``run-not-retained`` while its eviction record is kept, whatever
        rows its id still has; rows without a start are no run (``run-not-found``).
        """
        check_text(run_id, "run_id")
        with self.log.snapshot() as cur:
            if self.log.eviction(run_id, cur) is not None:
                raise RunNotRetained(f"run {run_id!r} was evicted; its events are gone")
            state = self._from_checkpoint(cur, run_id)
            if state is not None:
                state.fold(self.log.read_run_from(run_id, state.seq + 1, cur=cur))
                return Run(self, state)
            state = RunState(run_id=run_id)
            rows = self.log.read_run(run_id, cur)
            first = next(rows, None)
            if first is not None and first.seq != 1:
                raise RunNotFound(
                    f"run {run_id!r} has no start: only rows appended after its eviction remain "
                    "(its eviction record is purged; verify reports them)"
                )
            state.fold(rows if first is None else chain((first,), rows))
        if state.seq == 0:
            raise RunNotFound(f"no run {run_id!r} in {self.path}")
        return Run(self, state)

    def _from_checkpoint(self, cur: Cursor, run_id: str) -> RunState | None:
        """The run's state at its checkpoint (``recording.checkpoint``), or None: there is
        none, or it does not stand for the log (logged; the caller folds the whole log)."""
        state = RunState(run_id=run_id)
        try:
            return state if checkpoint.load(cur, run_id, state) else None
        except checkpoint.Mismatch as e:
            _log.warning("checkpoint_not_used", run_id=run_id, reason=str(e))
            return None

    def _commit(self, row: NewRow, event: EventBody, save: Saving | None = None) -> int:
        """Append one row and fold it into every projection, in one transaction (with the
        run checkpoint ``save`` that the row is due to carry, ``recording.checkpoint``)."""
        if self.projections.folds(event):
            return self._commit_many([(row, event)], save)[0]
        then = None if save is None else save.write
        positions, _ = self.log.append((row,), then)  # e.g. a Forkline event: nothing to fold
        self.projections.passed(row.run_id, row.seq)
        return positions[0]

    def _commit_many(self, pending: list[tuple[NewRow, EventBody]], save: Saving | None = None) -> list[int]:
        """Append rows (all or none) and fold each into every projection, in one transaction."""
        prepared: Prepared | None = None

        def project(cur: Cursor) -> None:
            if prepared is None:  # the fold reads the tables: inside the transaction
                for row, event in pending:
                    self.projections.apply(cur, row, event)
            else:
                self.projections.replay(cur, prepared)
            if save is not None:
                save.write(cur)

        try:
            # Folded and rendered before the transaction (no projection row needs a position):
            # on SQLite outside the write lock, on PostgreSQL sent with the rows.
            prepared = self.projections.prepare(pending)
            positions, _ = self.log.append([row for row, _ in pending], project)
        except BaseException:
            for run_id in {row.run_id for row, _ in pending}:
                self.projections.forget(run_id)  # the fold may have cached what did not commit
            raise
        return positions

    def _log_row(self, run_id: str, seq: int) -> LogRow | None:
        with self.log.snapshot():  # another thread's group transaction is never read into
            rows = list(self.log.read_run_from(run_id, seq, limit=1))
        return rows[0] if rows and rows[0].seq == seq else None

    # -- reading -----------------------------------------------------------------------------

    @_reads
    def list_runs(
        self,
        workflow: str | None = None,
        *,
        status: str | Iterable[str] | None = None,
        since: datetime | timedelta | str | None = None,
        until: datetime | timedelta | str | None = None,
        parent: str | None = None,
        labels: Mapping[str, str] | None = None,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[dict[str, Any]]:
        """Retained run summaries, newest first (start time, then id), in one snapshot.

        ``status``: one or several; ``since``/``until``: the start time from (inclusive) and
        to (exclusive), a timestamp or an age such as ``"2h"``; ``parent``: a run id;
        ``labels``: every one must match. ``limit`` runs at most; ``before=RUN_ID`` continues
        after that run (keyset pages: runs started meanwhile never shift a page).
        """
        from forkline_es.records import listing

        return listing.list_runs(
            self,
            workflow,
            status=status,
            since=since,
            until=until,
            parent=parent,
            labels=labels,
            limit=limit,
            before=before,
        )

    @_reads
    def resolve_run_id(self, given: str) -> str:
        """The full id of the one run whose id starts with ``given`` (``given`` itself when a
        run has exactly that id, or none matches); several matches are ``invalid-request``
        naming them. What the CLI does with every run id it is given."""
        from forkline_es.records import listing

        return listing.resolve_run_id(self, given)

    @_reads
    def get_run_record(self, run_id: str) -> dict[str, Any]:
        """The run record document (002), as one coherent snapshot."""
        from forkline_es.records import operations

        return operations.get_run_record(self, run_id)

    @_reads
    def get_step_record(self, run_id: str, path: str) -> dict[str, Any]:
        """One step record of the current view, with its payload inventory."""
        from forkline_es.records import operations

        return operations.get_step_record(self, run_id, path)

    @_reads
    def export_run_record(self, run_id: str) -> bytes:
        """Canonical JSON bytes of the run record document."""
        from forkline_es.records import operations

        return operations.export_run_record(self, run_id)

    @_writes
    @_reads
    def rebuild_projections(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Drop and refold every projection from the log; returns the events folded."""
        return self.projections.rebuild(progress)

    # -- artifacts, metrics and verify (forkline_es.artifacts; docs/verify.md) ------------------

    @property
    def has_artifact_folder(self) -> bool:
        """Whether the store has a folder for artifact files (``artifacts=`` given to ``open``,
        or a SQLite file's own): a PostgreSQL store opened without one has none."""
        return self._artifacts is not None or self.backend.artifacts_beside() is not None

    @functools.cached_property
    def artifact_files(self) -> ArtifactFiles:
        """Artifact content: ``artifacts`` given to ``open``, else ``<db>.artifacts/`` beside
        the file (a temporary folder for ":memory:")."""
        from forkline_es.artifacts.store import ArtifactFiles

        if self._artifacts is not None:
            return ArtifactFiles(Path(self._artifacts))
        beside = self.backend.artifacts_beside()
        if beside is None:
            raise InvalidRequest(
                f"{self.path} keeps no artifact files beside it; open it with "
                "fe.Store.open(location, artifacts='/a/folder/every/host/shares') "
                "(on the command line: forkline-es --artifacts FOLDER ...)"
            )
        return ArtifactFiles.for_database(beside)

    def metrics(self, workflow: str, name: str) -> MetricSummary | None:
        """count, mean, min, max, p50, p95 of ``name`` over ``workflow``'s runs; None if never measured."""
        check_text(workflow, "workflow")
        check_text(name, "a metric name")
        with self.log.snapshot() as cur:
            return artifact_sql.metric_summary(cur, workflow, name)

    def verify_run(
        self, run_id: str, anchors: Mapping[str, Any] | None = None, *, projections: bool = True
    ) -> VerifyReport:
        """Re-check the run's hash chain, payload values, artifact files and manifest, the
        store's triggers, (``projections``) its projections against a refold of its rows,
        and (``anchors``, as ``anchors()`` returned them earlier) its anchor; never repairs."""
        from forkline_es.artifacts import verify

        return verify.verify_run(
            self, run_id, projections=projections, anchors=anchors, extra=extra_projectors
        )

    def verify_all(
        self,
        progress: Callable[[int, int], None] | None = None,
        *,
        projections: bool = True,
        anchors: Mapping[str, Any] | None = None,
    ) -> list[VerifyReport]:
        """``verify_run`` for every run in the log, plus listed or anchored runs whose rows are
        all gone; a first report with ``run_id`` None holds the store's own problems, if any."""
        from forkline_es.artifacts import verify

        return verify.verify_all(
            self, progress, projections=projections, anchors=anchors, extra=extra_projectors
        )

    @_reads
    def anchors(self) -> dict[str, dict[str, Any]]:
        """Each retained run's last seq and its digest, in one snapshot: ``{run_id: {"seq": int,
        "digest": "sha256:..."}}``. Kept outside the file, they let ``verify`` see a run
        rewritten at or before them (docs/verify.md)."""
        with self.log.snapshot() as cur:
            return read_anchors(cur, self.log.dialect)

    # -- retention (forkline_es.retention; docs/retention.md) --------------------------------

    @_writes
    def apply_retention(
        self,
        policy: RetentionPolicy,
        now: datetime | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> retention.RetentionReport:
        """Evict and reduce completed runs as ``policy`` says; one transaction per run."""
        from forkline_es.retention import apply as retention

        return retention.apply_retention(self, policy, now, dry_run, progress)

    @_writes
    def evict_run(
        self, run_id: str, reason: str, policy: str | None = None, force: bool = False
    ) -> retention.EvictedRun:
        """Record the run's eviction, then delete its events, values and projection rows."""
        from forkline_es.retention import apply as retention

        return retention.evict_run(self, run_id, reason, policy, force)

    @_writes
    def remove_payloads(
        self, run_id: str, classes: Iterable[str] | None = None, reason: str | None = None
    ) -> tuple[tuple[int, str], ...]:
        """Remove a completed run's payload values (of ``classes``; all when None)."""
        check_text(run_id, "run_id")
        from forkline_es.retention.policy import RetentionPolicy

        wanted = RetentionPolicy(drop_payloads_after="0s", payload_classes=classes).payload_classes
        from forkline_es.retention import apply as retention

        return retention.remove_payloads(self, run_id, wanted, "manual", reason)

    @_writes
    def purge_tombstones(self, older_than: timedelta | str, now: datetime | None = None) -> int:
        """Delete eviction records older than ``older_than``; then run-not-found is permitted."""
        from forkline_es.retention import apply as retention

        return retention.purge_tombstones(self, older_than, now)

    @_reads
    def evictions(self) -> list[dict[str, Any]]:
        """The eviction records (tombstones) still kept."""
        from forkline_es.retention import apply as retention

        return retention.evictions(self)

    @_reads
    def stats(
        self, retention_policy: RetentionPolicy | None = None, now: datetime | None = None
    ) -> dict[str, Any]:
        """How big the store is and what fills it: database, free and WAL bytes, each table's
        bytes, runs by status and workflow, events by kind, payload values and bytes by
        class; with ``retention_policy``, what applying it now would free. Writes nothing."""
        from forkline_es.records import stats
        from forkline_es.retention import apply as retention

        with self.log.snapshot() as cur:
            figures = stats.collect(cur, self.log.dialect)
        figures["wal_bytes"] = self.backend.wal_bytes()
        figures["backend"] = self.log.dialect.name
        if retention_policy is not None:
            figures["retention"] = retention.would_free(self, retention_policy, now)
        return figures

    @_writes
    def gc(
        self, artifact_grace_seconds: float = 3600.0, progress: Callable[[int, int], None] | None = None
    ) -> retention.GcReport:
        """Give the pages freed by eviction back to the file system, and delete artifact
        files no retained run references and what killed processes left (staging files,
        check copies), older than ``artifact_grace_seconds``. ``progress`` hears (pages
        given back, free pages at the start)."""
        from forkline_es.retention import apply as retention

        return retention.gc(self, artifact_grace_seconds, progress)

    @_writes
    def register_consumer(self, name: str, since: Literal["start", "now"] = "start") -> feed.Consumer:
        """A named checkpoint on the completion feed; protects unacknowledged runs from eviction."""
        from forkline_es.retention import feed

        return feed.register_consumer(self, name, since)

    @_writes
    def unregister_consumer(self, name: str) -> bool:
        from forkline_es.retention import feed

        return feed.unregister_consumer(self, name)

    def consumers(self) -> list[feed.Consumer]:
        from forkline_es.retention import feed

        return feed.consumers(self)

    @_reads
    def completions(
        self, consumer: str | None = None, after: int = 0, limit: int = 100
    ) -> list[feed.Completion]:
        """Runs that concluded after the consumer's checkpoint (or ``after``), in log order."""
        from forkline_es.retention import feed

        return feed.completions(self, consumer, after, limit)

    @_writes
    def acknowledge(self, consumer: str, position: int) -> feed.Consumer:
        """Move the consumer's checkpoint forward to ``position`` (a completion's position)."""
        from forkline_es.retention import feed

        return feed.acknowledge(self, consumer, position)

    @_reads
    def check_projections(self, progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Rebuild into a scratch copy and list each difference with the live projections."""
        from forkline_es.projections.check import check_projections

        return check_projections(self.backend, extra_projectors, progress)
