"""The projection runner: folds each appended event inside the append's transaction,
catches up, and rebuilds every projection from the log.

Per run, the runner caches the state its folds need (summary and step views) together
with the last seq folded. Projection state of a run depends on that run's events only,
so the cache is valid exactly when the next row's seq is the cached seq plus one;
otherwise the state is reloaded from the tables (which are always current, being
written in the same transaction as the log).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, Protocol

from forkline_es._gc import gc_paused
from forkline_es._logging import get_logger
from forkline_es.log.connection import Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import (
    ENTRY_KINDS,
    EventBody,
    PayloadsRemoved,
    Recovered,
    RunConcluded,
)
from forkline_es.log.rows import LogRow
from forkline_es.projections.model import RunSummary, StepView
from forkline_es.projections.render import render_entry
from forkline_es.projections.sql import DDL, TABLES, Persister
from forkline_es.projections.steps import STEP_EVENTS, fold_step, refold
from forkline_es.projections.summaries import fold_summary

__all__ = ["CORE_VERSION", "Projections", "Projector"]

_log = get_logger("forkline_es.projections")

#: Bump when the core read models (summaries, step views, entries, removals) change shape.
CORE_VERSION: Final = 3

Progress = Callable[[int, int], None]


class Projector(Protocol):
    """An additional read model: its tables, its version, and how it folds one event."""

    name: str
    version: int
    ddl: str
    tables: tuple[str, ...]

    def apply(self, cur: Cursor, row: LogRow, event: EventBody) -> None: ...


@dataclass(slots=True)
class _RunCache:
    seq: int
    summary: RunSummary | None
    steps: dict[str, StepView | None] = field(default_factory=dict)


class Projections:
    """Keeps every read model in step with the log."""

    def __init__(self, log: EventLog, extra: Iterable[Projector] = ()) -> None:
        self.log = log
        self.extra = tuple(extra)
        self.persist = Persister()
        self._cache: dict[str, _RunCache] = {}

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
        """At open: rebuild when a projector's version changed, catch up when behind.

        Both decisions are re-taken inside the write transaction: another process may
        be appending (and folding) between our first look and our lock.
        """
        if not self._outdated() and not self._behind():
            return
        with self.log.transaction("catch up projections") as cur:
            if self._outdated():
                _log.info("projections_outdated", wanted=self.versions)
                self._refold(cur)
                return
            for row in self.log.read_from(self._folded()):
                self.apply(cur, row, row.event())
            self.persist.mark_position(cur, self.log.max_position())

    def _outdated(self) -> bool:
        stored = dict(self.log.conn.execute("SELECT name, version FROM projector").fetchall())
        return stored != self.versions

    def _folded(self) -> int:
        return min((p for (p,) in self.log.conn.execute("SELECT position FROM projector")), default=0)

    def _behind(self) -> bool:
        return self._folded() < self.log.max_position()

    def apply(self, cur: Cursor, row: LogRow, event: EventBody) -> None:
        """Fold one appended event into every projection, on the append's cursor."""
        cache = self._cache.get(row.run_id)
        if cache is None or cache.seq != row.seq - 1:
            cache = _RunCache(row.seq - 1, self.persist.load_summary(cur, row.run_id))
            self._cache[row.run_id] = cache
        cache.seq = row.seq

        summary = fold_summary(cache.summary, row, event)
        if summary is not cache.summary and summary is not None:
            self.persist.save_summary(cur, summary)
            cache.summary = summary

        view: StepView | None = None
        path: str | None = None
        if isinstance(event, STEP_EVENTS):
            path = event.path
            before = (
                cache.steps[path] if path in cache.steps else self.persist.load_step(cur, row.run_id, path)
            )
            view = fold_step(before, row, event)
            if view is not before and view is not None:
                self.persist.save_step(cur, row.run_id, view)
            cache.steps[path] = view

        if row.entry is not None:
            doc = render_entry(row, event, view)
            self.persist.insert_entry(
                cur,
                row.run_id,
                row.entry,
                row.position,
                row.generation,
                ENTRY_KINDS[row.kind],
                path,
                doc,
            )

        if isinstance(event, Recovered) and event.supersedes:
            self._supersede(cur, row, event, cache)
        elif isinstance(event, PayloadsRemoved):
            self.persist.record_removals(cur, row.run_id, [(p, s) for p, s in event.removed], row.position)

        for projector in self.extra:
            projector.apply(cur, row, event)

        if isinstance(event, RunConcluded):
            del self._cache[row.run_id]  # later events (retention) reload from the tables

    def _supersede(self, cur: Cursor, row: LogRow, event: Recovered, cache: _RunCache) -> None:
        assert row.entry is not None
        marks = ",".join("?" * len(event.supersedes))
        touched = [
            p
            for (p,) in cur.execute(
                f"SELECT DISTINCT path FROM entry WHERE run_id = ? AND seq IN ({marks}) AND path IS NOT NULL",
                (row.run_id, *event.supersedes),
            ).fetchall()
        ]
        self.persist.supersede(cur, row.run_id, event.supersedes, row.entry)
        for path in touched:
            active = [
                LogRow(*r)
                for r in cur.execute(
                    "SELECT l.position, l.run_id, l.seq, l.entry, l.generation, l.kind, l.at, l.key, l.body, "
                    "l.digest, l.prev FROM entry AS e JOIN log AS l ON l.position = e.position "
                    "WHERE e.run_id = ? AND e.path = ? AND e.superseded_by IS NULL ORDER BY e.seq",
                    (row.run_id, path),
                ).fetchall()
            ]
            view = refold((r, r.event()) for r in active)
            if view is None:
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
        self._cache.clear()
        total = self.log.end_position()  # evicted rows at the top were folded too
        folded = 0
        for table in self.tables:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
        cur.execute(DDL)
        for p in self.extra:
            cur.execute(p.ddl)
        cur.execute("DELETE FROM projector")
        for name, version in self.versions.items():
            cur.execute("INSERT INTO projector (name, version, position) VALUES (?, ?, 0)", (name, version))
        for row in self.log.read_from(0):
            self.apply(cur, row, row.event())
            folded += 1
            if progress is not None and folded % 10_000 == 0:
                progress(row.position, total)
        self.persist.mark_position(cur, total)
        self._cache.clear()
        if progress is not None:
            progress(total, total)
        return folded
