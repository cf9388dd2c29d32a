"""The SQL that persists projection state: DDL, loaders and savers, nothing else.

Every projection table can be dropped and refolded from the log; the ``doc`` columns
hold canonical JSON fragments of the run record document (values resolved at read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import msgspec

from forkline_es.log.backend import Cursor, Dialect
from forkline_es.log.rows import LOG_COLUMNS, LogRow
from forkline_es.projections.model import RunSummary, StepView
from forkline_es.projections.render import step_fragment
from forkline_es.values import time_key

__all__ = ["DDL", "TABLES", "EntryRow", "Persister", "RunQuery"]

#: (run_id, entry seq, doc fragment) of one ``entry`` row.
EntryRow = tuple[str, int, str]

_INSERT_ENTRY: Final = "INSERT INTO entry (run_id, entry, doc) VALUES (?, ?, ?)"
_SAVE_STEP: Final = (
    "INSERT INTO step_view (run_id, path, generation, status, outcome, state, doc) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, path) DO UPDATE SET "
    "generation = excluded.generation, status = excluded.status, outcome = excluded.outcome, "
    "state = excluded.state, doc = excluded.doc"
)
_SAVE_SUMMARY: Final = (
    "INSERT INTO run_summary (run_id, workflow, status, started_at, started_key, ended_at, parent, "
    "generation, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
    "workflow = excluded.workflow, status = excluded.status, started_at = excluded.started_at, "
    "started_key = excluded.started_key, ended_at = excluded.ended_at, parent = excluded.parent, "
    "generation = excluded.generation, state = excluded.state"
)
_SAVE_LABEL: Final = (
    "INSERT INTO run_label (name, value, started_key, run_id) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (name, value, started_key, run_id) DO NOTHING"
)
#: The time of a run's last row, as a scalar subquery (the log's (run_id, seq) key reads it);
#: retention's removal of payload values is no activity of the run.
_LAST_AT: Final = (
    "(SELECT l.at FROM log AS l WHERE l.run_id = {run} AND l.kind <> 'payloads-removed' "
    "ORDER BY l.seq DESC LIMIT 1)"
)
#: How many runs ``Persister._driver`` counts of a filter at most, to find the rarest.
_PROBE: Final = 1_000
_COUNT_LABEL: Final = (
    "SELECT count(*) FROM (SELECT 1 FROM run_label WHERE name = ? AND value = ? LIMIT ?) AS c"
)
_RECORD_REMOVAL: Final = (
    "INSERT INTO payload_removal (position, slot, run_id, removed_by) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (position, slot) DO UPDATE SET run_id = excluded.run_id, removed_by = excluded.removed_by"
)

_ENTRY_LOG_COLUMNS: Final = ", ".join(f"l.{c}" for c in LOG_COLUMNS.split(", "))

TABLES: Final = ("run_summary", "run_label", "step_view", "entry", "payload_removal")

DDL: Final = """
CREATE TABLE IF NOT EXISTS run_summary (
    run_id      TEXT PRIMARY KEY,
    workflow    TEXT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    started_key TEXT NOT NULL,           -- started_at in values.time_key's form: text order is time order
    ended_at    TEXT,
    parent      TEXT,
    generation  INTEGER NOT NULL,
    state       TEXT NOT NULL            -- the RunSummary Struct (JSON)
);
-- list_runs reads newest first, (started_key, run_id) descending, from one of these.
CREATE INDEX IF NOT EXISTS run_summary_by_time ON run_summary (started_key, run_id);
CREATE INDEX IF NOT EXISTS run_summary_by_workflow ON run_summary (workflow, started_key, run_id);
CREATE INDEX IF NOT EXISTS run_summary_by_status ON run_summary (status, started_key, run_id);
CREATE INDEX IF NOT EXISTS run_summary_by_parent ON run_summary (parent, started_key, run_id);

-- A run's labels (recorded once, at start), keyed for list_runs(labels=...) in time order.
CREATE TABLE IF NOT EXISTS run_label (
    name        TEXT NOT NULL,
    value       TEXT NOT NULL,
    started_key TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    PRIMARY KEY (name, value, started_key, run_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_label_by_run ON run_label (run_id);

CREATE TABLE IF NOT EXISTS step_view (
    run_id     TEXT NOT NULL,
    path       TEXT NOT NULL,
    generation INTEGER NOT NULL,
    status     TEXT NOT NULL,
    outcome    TEXT,
    state      TEXT NOT NULL,            -- the StepView Struct (JSON)
    doc        TEXT NOT NULL,            -- canonical JSON of the step record, values by reference
    PRIMARY KEY (run_id, path)
) WITHOUT ROWID;

-- Keyed by run and entry seq, never by log position: a fold writes it before the database
-- gives the row its position (one round trip on PostgreSQL, the fold before the write lock
-- on SQLite). A run's entries are one range of the key, read in entry order without the log.
CREATE TABLE IF NOT EXISTS entry (
    run_id        TEXT NOT NULL,
    entry         INTEGER NOT NULL,      -- the entry seq (the log row's ``entry``)
    superseded_by INTEGER,               -- entry seq of the recovery that superseded it
    doc           TEXT NOT NULL,         -- canonical JSON of the entry, slot values by reference
    PRIMARY KEY (run_id, entry)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS payload_removal (
    position    INTEGER NOT NULL,        -- the event whose slot value was removed (the event's own word)
    slot        TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    removed_by  INTEGER NOT NULL,        -- seq of the payloads-removed event in the run
    PRIMARY KEY (position, slot)
) WITHOUT ROWID;
"""


#: Sorted members: state folded from a caller's event must equal the state a rebuild folds
#: from the stored canonical body byte for byte, whatever order the caller's maps had.
@dataclass(frozen=True, slots=True)
class RunQuery:
    """``list_runs``'s filters, checked (``records.listing``); times in ``time_key`` form.

    ``before``: the (started_key, run_id) of the run a page continues after.
    """

    workflow: str | None = None
    statuses: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    parent: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    limit: int | None = None
    before: tuple[str, str] | None = None


_summary_enc: Final = msgspec.json.Encoder(order="sorted")
_summary_dec: Final = msgspec.json.Decoder(RunSummary)
_step_dec: Final = msgspec.json.Decoder(StepView)


def _step_row(run_id: str, v: StepView, doc: str | None) -> tuple[str, str, int, str, str | None, str, str]:
    return (
        run_id,
        v.path,
        v.generation,
        v.status,
        v.outcome,
        _summary_enc.encode(v).decode(),
        step_fragment(v) if doc is None else doc,
    )


class Persister:
    """Loads and saves projection state through one cursor (the append's transaction).

    Its statements are written once for every backend; a list parameter and a member of a
    JSON body are the ``dialect``'s.
    """

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        path = dialect.json_text("body", "path")
        self._entry_paths = (
            f"SELECT DISTINCT {path} FROM log WHERE run_id = ? "
            f"AND entry IN (SELECT j.value FROM {dialect.each('j')}) AND {path} IS NOT NULL"
        )
        self._active_rows = (
            f"SELECT {dialect.json_text('l.body', 'path')}, {_ENTRY_LOG_COLUMNS} "
            "FROM log AS l JOIN entry AS e ON e.run_id = l.run_id AND e.entry = l.entry "
            "WHERE l.run_id = ? AND e.superseded_by IS NULL "
            f"AND {dialect.json_text('l.body', 'path')} IN (SELECT j.value FROM {dialect.each('j', 'text')}) "
            "ORDER BY l.seq"
        )
        self._supersede = (
            "UPDATE entry SET superseded_by = ? WHERE run_id = ? "
            f"AND entry IN (SELECT j.value FROM {dialect.each('j')})"
        )

    def load_summary(self, cur: Cursor, run_id: str) -> RunSummary | None:
        rows = cur.execute("SELECT state FROM run_summary WHERE run_id = ?", (run_id,)).fetchall()
        return _summary_dec.decode(rows[0][0]) if rows else None

    def save_summary(self, cur: Cursor, s: RunSummary) -> None:
        key = time_key(s.started_at)
        cur.execute(
            _SAVE_SUMMARY,
            (
                s.run_id,
                s.workflow,
                s.status,
                s.started_at,
                key,
                s.ended_at,
                s.parent,
                s.generation,
                _summary_enc.encode(s).decode(),
            ),
        )
        if s.labels:  # a summary's labels never change: the rows of its start stay as they are
            cur.executemany(_SAVE_LABEL, [(n, v, key, s.run_id) for n, v in s.labels.items()])

    def started_key(self, cur: Cursor, run_id: str) -> str | None:
        """The run's ``started_key`` (where a page ``before`` it continues); None: no such run."""
        rows = cur.execute("SELECT started_key FROM run_summary WHERE run_id = ?", (run_id,)).fetchall()
        return rows[0][0] if rows else None

    def updated_at(self, cur: Cursor, run_id: str) -> str | None:
        """The time of the run's last log row but retention's (``x-updated-at``)."""
        rows = cur.execute(f"SELECT {_LAST_AT.format(run='?')}", (run_id,)).fetchall()
        return rows[0][0] if rows else None

    def list_summaries(self, cur: Cursor, q: RunQuery) -> list[tuple[RunSummary, str | None]]:
        """The summaries ``q`` selects, newest first (``started_key``, then ``run_id``, both
        descending), read along an index in that order so that a page stops after ``limit``.

        The rarest of ``q``'s labels and its statuses drives (``_driver``): a label's rows
        are keyed in time order, and so are a status's; every other label is one lookup of
        its primary key per run read.
        """
        labels = list(q.labels.items())
        driver = self._driver(cur, labels, q.statuses)
        where: list[str] = []
        params: list[object] = []
        if driver is not None:
            name, value = labels.pop(driver)
            source = "run_label AS k JOIN run_summary AS s ON s.run_id = k.run_id"
            key, rid = "k.started_key", "k.run_id"
            where += ["k.name = ?", "k.value = ?"]
            params += [name, value]
        else:
            source = "run_summary AS s"
            key, rid = "s.started_key", "s.run_id"
        for name, value in labels:
            where.append(
                "EXISTS (SELECT 1 FROM run_label AS o WHERE o.name = ? AND o.value = ? "
                f"AND o.started_key = {key} AND o.run_id = {rid})"
            )
            params += [name, value]
        if q.workflow is not None:
            where.append("s.workflow = ?")
            params.append(q.workflow)
        if q.statuses:
            where.append(f"s.status IN ({', '.join('?' for _ in q.statuses)})")
            params += q.statuses
        if q.parent is not None:
            where.append("s.parent = ?")
            params.append(q.parent)
        if q.since is not None:
            where.append(f"{key} >= ?")
            params.append(q.since)
        if q.until is not None:
            where.append(f"{key} < ?")
            params.append(q.until)
        if q.before is not None:
            at, run_id = q.before
            where.append(f"{key} <= ? AND ({key} < ? OR {rid} < ?)")
            params += [at, at, run_id]
        sql = f"SELECT s.state, {_LAST_AT.format(run='s.run_id')} FROM {source}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {key} DESC, {rid} DESC"
        if q.limit is not None:
            sql += " LIMIT ?"
            params.append(q.limit)
        return [(_summary_dec.decode(s), at) for s, at in cur.execute(sql, params)]

    def run_ids_from(self, cur: Cursor, start: str, limit: int) -> list[str]:
        """The first ``limit`` run ids at or after ``start`` in code point order: the ids a
        prefix ``start`` names come first (one range of the primary key)."""
        rows = cur.execute(
            "SELECT run_id FROM run_summary WHERE run_id >= ? ORDER BY run_id LIMIT ?", (start, limit)
        )
        return [rid for (rid,) in rows]

    def _driver(self, cur: Cursor, labels: list[tuple[str, str]], statuses: tuple[str, ...]) -> int | None:
        """Which label's rows a listing reads along (its index in ``labels``), or None for
        ``run_summary``'s own indexes: the filter matching the fewest runs, counted up to
        ``_PROBE`` each. Reading along a common label (``region=eu``) to find a rare one
        (``customer=c-42``) would otherwise look at hundreds of runs per one it keeps."""
        if not labels:
            return None
        counts = [cur.execute(_COUNT_LABEL, (name, value, _PROBE)).fetchall()[0][0] for name, value in labels]
        best = min(range(len(labels)), key=counts.__getitem__)
        if statuses:
            marks = ", ".join("?" for _ in statuses)
            sql = f"SELECT count(*) FROM (SELECT 1 FROM run_summary WHERE status IN ({marks}) LIMIT ?) AS c"
            if cur.execute(sql, (*statuses, _PROBE)).fetchall()[0][0] < counts[best]:
                return None
        return best

    def load_step(self, cur: Cursor, run_id: str, path: str) -> StepView | None:
        rows = cur.execute(
            "SELECT state FROM step_view WHERE run_id = ? AND path = ?", (run_id, path)
        ).fetchall()
        return _step_dec.decode(rows[0][0]) if rows else None

    def save_step(self, cur: Cursor, run_id: str, v: StepView, doc: str | None = None) -> None:
        """Write the path's view; ``doc``: its step fragment, when already rendered."""
        cur.execute(_SAVE_STEP, _step_row(run_id, v, doc))

    def save_steps(
        self, cur: Cursor, run_id: str, views: dict[str, tuple[StepView | None, str | None]]
    ) -> None:
        """Write each path's final view (a rebuild's write-behind); None deletes the path's row."""
        gone = [(run_id, path) for path, (v, _) in views.items() if v is None]
        if gone:
            cur.executemany("DELETE FROM step_view WHERE run_id = ? AND path = ?", gone)
        cur.executemany(_SAVE_STEP, [_step_row(run_id, v, d) for v, d in views.values() if v is not None])

    def step_docs(self, cur: Cursor, run_id: str) -> list[tuple[str, str]]:
        """(path, step record fragment) of every step of the run, in code point order of path."""
        rows = cur.execute("SELECT path, doc FROM step_view WHERE run_id = ? ORDER BY path", (run_id,))
        return [(path, doc) for path, doc in rows]

    def step_doc(self, cur: Cursor, run_id: str, path: str) -> str | None:
        rows = cur.execute(
            "SELECT doc FROM step_view WHERE run_id = ? AND path = ?", (run_id, path)
        ).fetchall()
        return rows[0][0] if rows else None

    def entry_docs(self, cur: Cursor, run_id: str) -> list[str]:
        """The run's entry fragments in seq order (one range of ``entry``'s key)."""
        rows = cur.execute("SELECT doc FROM entry WHERE run_id = ? ORDER BY entry", (run_id,))
        return [d for (d,) in rows]

    def entry_paths(self, cur: Cursor, run_id: str, seqs: list[int]) -> list[str]:
        """The step paths of the given entries (a recovery's superseded ones)."""
        rows = cur.execute(self._entry_paths, (run_id, self.dialect.array(seqs)))
        return [p for (p,) in rows]

    def active_rows(self, cur: Cursor, run_id: str, paths: list[str]) -> dict[str, list[LogRow]]:
        """Per path, the log rows of its entries that no recovery superseded, in seq order
        (one pass over the run's rows, however many paths a recovery touched)."""
        out: dict[str, list[LogRow]] = {path: [] for path in paths}
        rows = cur.execute(self._active_rows, (run_id, self.dialect.array(paths)))
        for path, *columns in rows:
            out[path].append(LogRow(*columns))
        return out

    def delete_step(self, cur: Cursor, run_id: str, path: str) -> None:
        cur.execute("DELETE FROM step_view WHERE run_id = ? AND path = ?", (run_id, path))

    def insert_entry(self, cur: Cursor, row: EntryRow) -> None:
        cur.execute(_INSERT_ENTRY, row)

    def insert_entries(self, cur: Cursor, rows: list[EntryRow]) -> None:
        cur.executemany(_INSERT_ENTRY, rows)

    def supersede(self, cur: Cursor, run_id: str, seqs: list[int], by: int) -> None:
        cur.execute(self._supersede, (by, run_id, self.dialect.array(seqs)))

    def record_removals(self, cur: Cursor, run_id: str, removed: list[tuple[int, str]], by: int) -> None:
        """``removed``: the event's own (position, slot) pairs; ``by``: its seq in the run."""
        cur.executemany(
            _RECORD_REMOVAL,
            [(position, slot, run_id, by) for position, slot in removed],
        )

    def mark_live(self, cur: Cursor) -> None:
        """Every projector has folded through the end of the log; appends keep it there."""
        cur.execute("UPDATE projector SET position = NULL WHERE position IS NOT NULL")
