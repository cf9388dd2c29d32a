"""The SQL that persists projection state: DDL, loaders and savers, nothing else.

Every projection table can be dropped and refolded from the log; the ``doc`` columns
hold canonical JSON fragments of the run record document (values resolved at read).
"""

from __future__ import annotations

from typing import Final

import msgspec

from forkline_es.log.backend import Cursor, Dialect
from forkline_es.log.rows import LOG_COLUMNS, LogRow
from forkline_es.projections.model import RunSummary, StepView
from forkline_es.projections.render import step_fragment

__all__ = ["DDL", "TABLES", "EntryRow", "Persister"]

#: (position, doc fragment) of one ``entry`` row.
EntryRow = tuple[int, str]

_INSERT_ENTRY: Final = "INSERT INTO entry (position, doc) VALUES (?, ?)"
_SAVE_STEP: Final = (
    "INSERT INTO step_view (run_id, path, generation, status, outcome, state, doc) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, path) DO UPDATE SET "
    "generation = excluded.generation, status = excluded.status, outcome = excluded.outcome, "
    "state = excluded.state, doc = excluded.doc"
)
_SAVE_SUMMARY: Final = (
    "INSERT INTO run_summary (run_id, workflow, status, started_at, ended_at, parent, generation, state) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
    "workflow = excluded.workflow, status = excluded.status, started_at = excluded.started_at, "
    "ended_at = excluded.ended_at, parent = excluded.parent, generation = excluded.generation, "
    "state = excluded.state"
)
_RECORD_REMOVAL: Final = (
    "INSERT INTO payload_removal (position, slot, run_id, removed_by) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (position, slot) DO UPDATE SET run_id = excluded.run_id, removed_by = excluded.removed_by"
)

_ENTRY_LOG_COLUMNS: Final = ", ".join(f"l.{c}" for c in LOG_COLUMNS.split(", "))

TABLES: Final = ("run_summary", "step_view", "entry", "payload_removal")

DDL: Final = """
CREATE TABLE IF NOT EXISTS run_summary (
    run_id      TEXT PRIMARY KEY,
    workflow    TEXT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    parent      TEXT,
    generation  INTEGER NOT NULL,
    state       TEXT NOT NULL            -- the RunSummary Struct (JSON)
);
CREATE INDEX IF NOT EXISTS run_summary_by_workflow ON run_summary (workflow);

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

-- Keyed by the entry's log position: run, seq, generation and kind are the log row's own,
-- and entries are appended in position order (a rowid table grows at its end).
CREATE TABLE IF NOT EXISTS entry (
    position      INTEGER PRIMARY KEY,   -- the log row this entry renders
    superseded_by INTEGER,               -- entry seq of the recovery that superseded it
    doc           TEXT NOT NULL          -- canonical JSON of the entry, slot values by reference
);

CREATE TABLE IF NOT EXISTS payload_removal (
    position    INTEGER NOT NULL,        -- the event whose slot value was removed
    slot        TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    removed_by  INTEGER NOT NULL,        -- position of the payloads-removed event
    PRIMARY KEY (position, slot)
) WITHOUT ROWID;
"""

#: Sorted members: state folded from a caller's event must equal the state a rebuild folds
#: from the stored canonical body byte for byte, whatever order the caller's maps had.
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
            "FROM log AS l JOIN entry AS e ON e.position = l.position "
            "WHERE l.run_id = ? AND e.superseded_by IS NULL "
            f"AND {dialect.json_text('l.body', 'path')} IN (SELECT j.value FROM {dialect.each('j', 'text')}) "
            "ORDER BY l.seq"
        )
        self._supersede = (
            "UPDATE entry SET superseded_by = ? WHERE position IN (SELECT position FROM log "
            f"WHERE run_id = ? AND entry IN (SELECT j.value FROM {dialect.each('j')}))"
        )

    def load_summary(self, cur: Cursor, run_id: str) -> RunSummary | None:
        rows = cur.execute("SELECT state FROM run_summary WHERE run_id = ?", (run_id,)).fetchall()
        return _summary_dec.decode(rows[0][0]) if rows else None

    def save_summary(self, cur: Cursor, s: RunSummary) -> None:
        cur.execute(
            _SAVE_SUMMARY,
            (
                s.run_id,
                s.workflow,
                s.status,
                s.started_at,
                s.ended_at,
                s.parent,
                s.generation,
                _summary_enc.encode(s).decode(),
            ),
        )

    def load_summaries(self, cur: Cursor, workflow: str | None = None) -> list[RunSummary]:
        if workflow is None:
            rows = cur.execute("SELECT state FROM run_summary ORDER BY started_at, run_id")
        else:
            rows = cur.execute(
                "SELECT state FROM run_summary WHERE workflow = ? ORDER BY started_at, run_id",
                (workflow,),
            )
        return [_summary_dec.decode(s) for (s,) in rows]

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
        """The run's entry fragments in seq order (the log's (run_id, seq) index, then by position)."""
        rows = cur.execute(
            "SELECT e.doc FROM log AS l JOIN entry AS e ON e.position = l.position "
            "WHERE l.run_id = ? ORDER BY l.seq",
            (run_id,),
        )
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
        cur.executemany(
            _RECORD_REMOVAL,
            [(position, slot, run_id, by) for position, slot in removed],
        )

    def mark_live(self, cur: Cursor) -> None:
        """Every projector has folded through the end of the log; appends keep it there."""
        cur.execute("UPDATE projector SET position = NULL WHERE position IS NOT NULL")
