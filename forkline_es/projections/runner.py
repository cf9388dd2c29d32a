"""The projection runner: folds each appended event inside the append's transaction,
catches up, and rebuilds every projection from the log.

Per run, the runner caches the state its folds need (summary and step views) together
with the last seq folded. Projection state of a run depends on that run's events only,
so the cache is valid exactly when the next row's seq is the cached seq plus one;
otherwise the state is reloaded from the tables (which are always current, being
written in the same transaction as the log).

A rebuild folds the same way but writes behind (``_WriteBehind``): entry rows are
inserted in batches, and a step path's view is written once per run with its final
state instead of once per event. Whatever reads the tables during the fold (a
recovery's supersession, a reload after the run's cache was dropped) flushes first, so
the tables it reads are exactly what the incremental path would have written by then.
An extra projector reads only its own tables and is called only for the event types it
names, so it never sees pending writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, get_args

from forkline_es._gc import gc_paused
from forkline_es._logging import get_logger
from forkline_es.errors import StoreError
from forkline_es.log.backend import Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import (
    ENTRY_KINDS,
    EventBody,
    PayloadsRemoved,
    Recovered,
    RunConcluded,
    decode_body,
)
from forkline_es.log.rows import LogRow, RowHeader
from forkline_es.projections import versions
from forkline_es.projections.model import RunSummary, StepView
from forkline_es.projections.render import entry_fragment, step_fragment
from forkline_es.projections.sql import DDL, TABLES, EntryRow, Persister
from forkline_es.projections.steps import ENTRY_STEP_EVENTS, STEP_EVENTS, fold_step, refold
from forkline_es.projections.summaries import SUMMARY_EVENTS, fold_summary

__all__ = ["CORE_VERSION", "Prepared", "Projections", "Projector"]

_log = get_logger("forkline_es.projections")

#: Bump when the core read models (summaries, step views, entries, removals) change shape.
CORE_VERSION: Final = 8  # 6: StepView.end_code; 7: run labels, started_key and the listing indexes;
# 8: no log position in any row (references by seq, entries keyed by run and entry seq)

Progress = Callable[[int, int], None]


class Projector(Protocol):
    """An additional read model: its tables, its version, and how it folds one event."""

    name: str
    version: int
    ddl: str
    tables: tuple[str, ...]
    #: The event types ``apply`` folds; the runner calls it for no other.
    events: tuple[type[EventBody], ...]

    def apply(self, cur: Cursor, row: RowHeader, event: EventBody) -> None:
        """Fold ``event``; ``row`` has no log position (the fold may run before it has one)."""
        ...


#: The event types ``Projections.apply`` does more for than note the run's seq.
_CORE_FOLDED: Final = (*SUMMARY_EVENTS, *STEP_EVENTS, Recovered, PayloadsRemoved, RunConcluded)

#: Entry rows buffered by a rebuild before one ``executemany``.
_ENTRY_BATCH: Final = 5_000
#: Log rows fetched per read during a rebuild.
_READ_BATCH: Final = 20_000


#: A fold's writes, computed before the append's transaction: (sql, parameters, executemany).
Prepared = list[tuple[str, Any, bool]]


class _MustRead(Exception):
    """A fold that is being prepared asked the tables something: fold under the lock instead."""


class _NoRows:
    __slots__ = ()

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def fetchall(self) -> list[Any]:
        return []


_NO_ROWS: Final = _NoRows()
_WRITES: Final = ("INSERT ", "UPDATE ", "DELETE ")


class _Writes:
    """A cursor that keeps each write for ``Projections.replay`` and refuses every read: a
    fold prepared from the run's cache alone writes and never reads."""

    __slots__ = ("statements",)

    def __init__(self) -> None:
        self.statements: Prepared = []

    def execute(self, sql: str, params: Any = (), /) -> _NoRows:
        if not sql.startswith(_WRITES) or " RETURNING " in sql:
            raise _MustRead
        self.statements.append((sql, params, False))
        return _NO_ROWS

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> None:
        self.statements.append((sql, list(params), True))


@dataclass(slots=True)
class _RunCache:
    """``complete``: folded from the run's first event, so ``steps`` holds every path it has."""

    seq: int
    summary: RunSummary | None
    complete: bool
    steps: dict[str, StepView | None] = field(default_factory=dict)


@dataclass(slots=True)
class _WriteBehind:
    """A rebuild's pending writes: entry rows, and each run's changed step views (None: delete)
    with their fragments when already rendered."""

    entries: list[EntryRow] = field(default_factory=list)
    steps: dict[str, dict[str, tuple[StepView | None, str | None]]] = field(default_factory=dict)

    def flush_entries(self, cur: Cursor, persist: Persister) -> None:
        if self.entries:
            persist.insert_entries(cur, self.entries)
            self.entries.clear()

    def flush_run(self, cur: Cursor, persist: Persister, run_id: str) -> None:
        views = self.steps.pop(run_id, None)
        if views:
            persist.save_steps(cur, run_id, views)

    def flush(self, cur: Cursor, persist: Persister) -> None:
        self.flush_entries(cur, persist)
        for run_id in list(self.steps):
            self.flush_run(cur, persist, run_id)


class Projections:
    """Keeps every read model in step with the log."""

    def __init__(self, log: EventLog, extra: Iterable[Projector] = ()) -> None:
        self.log = log
        self.extra = tuple(extra)
        self.persist = Persister(log.dialect)
        self._cache: dict[str, _RunCache] = {}
        self._pending: _WriteBehind | None = None  # set only while a rebuild folds
        self._folders: dict[type[EventBody], list[Projector]] = {}
        for projector in self.extra:
            for kind in projector.events:
                self._folders.setdefault(kind, []).append(projector)
        # Events no read model folds (today Forkline's; artifacts and observations have
        # projectors of their own): an append of one skips the fold and only moves the
        # run's cached seq on (``passed``).
        self._inert = frozenset(
            t
            for t in get_args(EventBody)
            if not issubclass(t, _CORE_FOLDED)
            and t.__struct_config__.tag not in ENTRY_KINDS
            and t not in self._folders
        )

    @property
    def versions(self) -> dict[str, int]:
        out = {"records": CORE_VERSION}
        out.update({p.name: p.version for p in self.extra})
        return out

    @property
    def tables(self) -> tuple[str, ...]:
        return TABLES + tuple(t for p in self.extra for t in p.tables)

    # -- keeping up ----------------------------------------------------------------------

    def ensure(self) -> None:
        """At open: rebuild when a projector's version changed, catch up when one lags.

        A projector lags only when its position is a number: rows after it were appended
        without folding (appends made through a store fold in their own transaction and
        leave it NULL). Both decisions are re-taken inside the write transaction: another
        process may be appending (and folding) between our first look and our lock. A writer
        then holds its versions (``versions``, the backend's ``ProjectorFence``): it never
        folds into tables another version refolded.
        """
        fence, key = self.log.backend.projectors, versions.key_of(self.versions)
        with self.log.snapshot() as cur:
            settled = not self._outdated(cur) and self._lagging(cur) is None
            if settled and (self.log.read_only or fence.hold_read(cur, key)):
                return
        if self.log.read_only:
            self._fold_privately()
            return
        with self.log.transaction("catch up projections") as cur:
            fence.gate(cur)  # the versions read from here on stay so until we hold them
            if self._outdated(cur):
                _log.info("projections_outdated", wanted=self.versions)
                self._refold(cur)
            elif (folded := self._lagging(cur)) is not None:
                for row in self.log.read_from(folded, upto=self.log.backend.horizon(cur), cur=cur):
                    self.apply(cur, row, row.event())
                self.persist.mark_live(cur)
                _log.info("projections_caught_up", after=folded)
            fence.hold(cur, key)

    def _fold_privately(self) -> None:
        """A read-only store whose projections are behind the log or of another version: fold
        the whole log into TEMP tables of the same names, which every later statement of this
        connection reads instead (SQLite resolves an unqualified name in ``temp`` first).

        The records are then exactly what a rebuild would give, and the file is not written;
        they are as of this fold: appends another process makes later are not folded.
        """
        backend = self.log.backend
        with backend.private("fold projections") as cur:  # one snapshot; writes to temp tables only
            for ddl in (DDL, *(p.ddl for p in self.extra)):
                cur.execute(backend.dialect.temp_ddl(backend.dialect.ddl(ddl)))
            missing = [t for t in self.tables if not backend.has_temp_table(cur, t)]
            if missing:
                raise StoreError(f"cannot fold a read-only store's projections privately: {missing}")
            folded = self._fold_all(cur)
        _log.warning("projections_folded_privately", events=folded, wanted=self.versions)

    def _outdated(self, cur: Cursor) -> bool:
        stored = dict(cur.execute("SELECT name, version FROM projector").fetchall())
        return stored != self.versions

    def _lagging(self, cur: Cursor) -> int | None:
        """The lowest position a lagging projector has folded through; None when all are live."""
        value = cur.execute("SELECT min(position) FROM projector").fetchall()[0][0]
        return None if value is None else int(value)

    def folds(self, event: EventBody) -> bool:
        """Whether ``event`` changes any projection; an append of one that does not skips
        ``apply`` and calls ``passed`` once it has committed."""
        return type(event) not in self._inert

    def passed(self, run_id: str, seq: int) -> None:
        """Note that the run's event ``seq``, committed, changed no projection."""
        cache = self._cache.get(run_id)
        if cache is not None and cache.seq == seq - 1:
            cache.seq = seq

    def prepare(self, pending: Sequence[tuple[RowHeader, EventBody]]) -> Prepared | None:
        """The writes that folding ``pending`` (rows not yet appended) makes, computed from the
        runs' cached state alone, before the append's transaction: folding and rendering
        then hold no write lock (SQLite) and go out with the rows (PostgreSQL). None when
        the fold must read the tables (a run not cached, a step path it does not know, a
        recovery's supersession): ``apply`` then folds inside the transaction, as always.

        A batch's writes go behind as a rebuild's do (``_WriteBehind``): its entry rows in
        one ``executemany``, each step path's view once with its last state, so a
        ``run.batch()`` of a step's four events writes one view, not four.

        The cache moves on as if the rows committed; a caller whose append fails must
        ``forget`` their runs (``Store._commit_many`` does). If another process appended to
        a run meanwhile, the rows' ``(run_id, seq)`` is taken and the append refused.
        """
        if self._pending is not None:
            return None  # a rebuild of this store is folding (its cache): fold after it, inside
        writes = _Writes()
        behind = _WriteBehind() if len(pending) > 1 else None  # one event writes each row once
        try:
            for row, event in pending:
                self._fold(writes, row, event, behind)
            if behind is not None:
                behind.flush(writes, self.persist)
        except _MustRead:
            for run_id in {row.run_id for row, _ in pending}:
                self.forget(run_id)  # partly advanced: ``apply`` reloads it from the tables
            return None
        return writes.statements

    def replay(self, cur: Cursor, prepared: Prepared) -> None:
        """Inside the append's transaction: the prepared writes, if the projector versions
        they were folded for are still the stored ones (the fence, as ``apply`` checks it)."""
        if self.log.backend.projectors.changed(cur):
            self._verify(cur)
        for sql, params, many in prepared:
            if many:
                cur.executemany(sql, params)
            else:
                cur.execute(sql, params)

    def apply(self, cur: Cursor, row: RowHeader, event: EventBody) -> None:
        """Fold one appended event into every projection, on the append's cursor.

        Nothing here needs the row's log position: an append folds before the database
        gives it one (``Backend.append``)."""
        behind = self._pending
        if behind is None and self.log.backend.projectors.changed(cur):
            self._verify(cur)  # another process may have refolded with other versions
        self._fold(cur, row, event, behind)

    def _fold(self, cur: Cursor, row: RowHeader, event: EventBody, behind: _WriteBehind | None) -> None:
        """``apply``'s fold; ``behind``: where writes wait (a rebuild's or a prepared batch's)."""
        cache = self._cache.get(row.run_id)
        if cache is None or cache.seq != row.seq - 1:
            cache = self._reload(cur, row, behind)
        cache.seq = row.seq

        step: str | None = None  # the step fragment of a step entry
        if isinstance(event, SUMMARY_EVENTS):  # no other event changes the summary
            summary = fold_summary(cache.summary, row, event)
            if summary is not cache.summary and summary is not None:
                self.persist.save_summary(cur, summary)
                cache.summary = summary
        elif isinstance(event, STEP_EVENTS):
            path = event.path
            if path in cache.steps:
                before = cache.steps[path]
            elif cache.complete:
                before = None  # the run never had this path: no need to ask the table
            else:
                before = self.persist.load_step(cur, row.run_id, path)
            view = fold_step(before, row, event)  # a step entry's event always gives a new view
            cache.steps[path] = view
            if view is not before and view is not None:
                if isinstance(event, ENTRY_STEP_EVENTS):
                    step = step_fragment(view)  # rendered once: the entry's and the view's doc
                if behind is None:
                    self.persist.save_step(cur, row.run_id, view, step)
                else:
                    behind.steps.setdefault(row.run_id, {})[path] = (view, step)

        if row.entry is not None:
            entry = (row.run_id, row.entry, entry_fragment(row, event, step))
            if behind is None:
                self.persist.insert_entry(cur, entry)
            else:
                behind.entries.append(entry)
                if len(behind.entries) >= _ENTRY_BATCH:
                    behind.flush_entries(cur, self.persist)

        if isinstance(event, Recovered) and event.supersedes:
            if behind is not None:
                behind.flush_entries(cur, self.persist)  # the supersession reads and updates them
            self._supersede(cur, row, event, cache, behind)
        elif isinstance(event, PayloadsRemoved):
            self.persist.record_removals(cur, row.run_id, [(p, s) for p, s in event.removed], row.seq)

        for projector in self._folders.get(type(event), ()):
            projector.apply(cur, row, event)

        if isinstance(event, RunConcluded):
            if behind is not None:
                behind.flush_run(cur, self.persist, row.run_id)
            del self._cache[row.run_id]  # later events (retention) reload from the tables

    def _verify(self, cur: Cursor) -> None:
        """Fold on only if the stored versions are still ours (else nothing is written)."""
        stored = versions.stored_versions(cur)
        if stored != self.versions:
            versions.refuse_changed(stored, self.versions)
        self.log.backend.projectors.hold(cur, versions.key_of(stored))

    def _reload(self, cur: Cursor, row: RowHeader, behind: _WriteBehind | None) -> _RunCache:
        """A fresh cache for ``row``'s run: empty at its first event, else read from the tables."""
        if behind is not None:
            behind.flush_run(cur, self.persist, row.run_id)  # the reload reads the tables
        fresh = row.seq == 1
        summary = None if fresh else self.persist.load_summary(cur, row.run_id)
        cache = self._cache[row.run_id] = _RunCache(row.seq - 1, summary, fresh)
        return cache

    def _supersede(
        self, cur: Cursor, row: RowHeader, event: Recovered, cache: _RunCache, behind: _WriteBehind | None
    ) -> None:
        assert row.entry is not None
        touched = self.persist.entry_paths(cur, row.run_id, event.supersedes)
        self.persist.supersede(cur, row.run_id, event.supersedes, row.entry)
        for path, rows in self.persist.active_rows(cur, row.run_id, touched).items():
            view = refold((r, r.event()) for r in rows)
            if behind is not None:
                behind.steps.setdefault(row.run_id, {})[path] = (view, None)
            elif view is None:
                self.persist.delete_step(cur, row.run_id, path)
            else:
                self.persist.save_step(cur, row.run_id, view)
            cache.steps[path] = view

    def forget(self, run_id: str) -> None:
        self._cache.pop(run_id, None)

    # -- rebuilding ----------------------------------------------------------------------

    def rebuild(self, progress: Progress | None = None) -> int:
        """Drop every projection and refold the whole log, in one transaction."""
        with self.log.transaction("rebuild projections") as cur, gc_paused():
            folded = self._refold(cur, progress)
        _log.info("projections_rebuilt", events=folded)
        return folded

    def _refold(self, cur: Cursor, progress: Progress | None = None) -> int:
        fence = self.log.backend.projectors
        fence.gate(cur)  # nobody holds or changes the versions until this refold commits
        stored = versions.stored_versions(cur)
        versions.refuse_older(stored, self.versions)
        if fence.others(cur, versions.key_of(self.versions)):
            versions.refuse_others(stored, self.versions)
        dialect = self.log.dialect
        granted = dialect.kept_privileges(cur)
        dialect.drop_derived(cur, self.tables)
        cur.execute(dialect.ddl(DDL))
        for p in self.extra:
            cur.execute(dialect.ddl(p.ddl))
        for grant in granted:  # the roles that read and fold them keep doing so
            cur.execute(grant)
        cur.execute("DELETE FROM projector")
        for name, version in self.versions.items():
            cur.execute("INSERT INTO projector (name, version) VALUES (?, ?)", (name, version))  # live
        return self._fold_all(cur, progress)

    def _fold_all(self, cur: Cursor, progress: Progress | None = None) -> int:
        """Fold the whole log into the (empty) projection tables ``cur`` writes."""
        total = self.log.end_position(cur)  # evicted rows at the top were folded too
        horizon = self.log.backend.horizon(cur)
        rows = self.log.read_from(0, _READ_BATCH, upto=horizon, cur=cur)
        folded = self.fold_runs(cur, rows, None if progress is None else lambda p: progress(p, total))
        if progress is not None:
            progress(total, total)
        return folded

    def fold_runs(
        self, cur: Cursor, rows: Iterable[LogRow], progress: Callable[[int], None] | None = None
    ) -> int:
        """Fold ``rows`` into the projection tables ``cur`` writes, writing behind; the number
        folded. Each run's rows come in seq order from its first, and the tables hold no
        row of those runs yet: a rebuild's whole log, or one partition of its runs folded
        into a scratch database (``benchmarks/rebuild_parallel.py``).
        """
        self._cache.clear()
        folded = 0
        self._pending = behind = _WriteBehind()
        # The common case inlined: a step event of a run whose cache is contiguous and
        # holds the path's view (or knows it has none). It does exactly what ``apply``
        # does for it with a write-behind pending; anything else goes through ``apply``.
        fast = frozenset(t for t in STEP_EVENTS if t not in self._folders)
        entry_step = frozenset(ENTRY_STEP_EVENTS)
        cache_of = self._cache.get
        pending = behind.steps
        entries = behind.entries
        apply = self.apply
        try:
            for row in rows:
                event = decode_body(row.body)
                folded += 1
                if progress is not None and folded % 10_000 == 0:
                    progress(row.position)
                cache = cache_of(row.run_id)
                kind = type(event)
                if kind not in fast or cache is None or cache.seq != row.seq - 1:
                    apply(cur, row, event)
                    continue
                steps = cache.steps
                path: str = event.path  # type: ignore[union-attr,assignment]  # every STEP_EVENTS type has one
                before = steps.get(path)
                if before is None and path not in steps and not cache.complete:
                    apply(cur, row, event)  # the view is in the table
                    continue
                cache.seq = row.seq
                view = fold_step(before, row, event)
                steps[path] = view
                step: str | None = None
                if view is not before and view is not None:
                    if kind in entry_step:
                        step = step_fragment(view)
                    run_views = pending.get(row.run_id)
                    if run_views is None:
                        run_views = pending[row.run_id] = {}
                    run_views[path] = (view, step)
                if row.entry is not None:
                    entries.append((row.run_id, row.entry, entry_fragment(row, event, step)))
                    if len(entries) >= _ENTRY_BATCH:
                        behind.flush_entries(cur, self.persist)
            behind.flush(cur, self.persist)
        finally:
            self._pending = None
            self._cache.clear()
        return folded
