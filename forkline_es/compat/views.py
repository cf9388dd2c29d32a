"""Forkline's ``runs`` and ``events`` tables, as SQL views over the log and the run summaries.

``sqlite3 runs.db "SELECT * FROM runs;"`` and ``"SELECT * FROM events;"`` show exactly the
columns of Forkline's Recording v0 schema, in its order. They are views, not tables: the log
stays the only truth, nothing is written twice on the append path, and eviction or a rebuild
can never leave them disagreeing with the log.

- ``runs``: one row per run of the store (executor runs too: a run's workflow is its
  entrypoint). ``status`` is Forkline's word for the engine's outcome (``succeeded`` ->
  ``success``, ``failed`` with code ``error`` -> ``error``, any other ``failed`` ->
  ``failure``; ``cancelled`` and ``stopped`` as they are) and NULL while the run is open.
- ``events``: one row per ``forkline-logged`` event; ``event_id`` is the global log position
  and ``payload`` the canonical JSON stored in slot ``payload`` (NULL once retention removed it).

``run_events`` reads one run's rows of ``events``: ``RunRecorder.get_events`` and the text of
``forkline-es show`` both go through it.

``ForklineViews`` is an additional projector with no tables of its own: its DDL runs on every
rebuild (the views depend on ``run_summary``, which a rebuild drops and recreates), and a new
version replaces the views in databases made by older code.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from forkline_es.log.backend import Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.log.events import EventBody
from forkline_es.log.foreign import ForeignFile, ForeignFileError, open_foreign
from forkline_es.log.rows import RowHeader
from forkline_es.log.schema import payload_ids

__all__ = [
    "EVENT_COLUMNS",
    "FORKLINE_SCHEMA_VERSION",
    "RUN_COLUMNS",
    "VIEWS_DDL",
    "ForklineViews",
    "has_forkline_tables",
    "import_hint",
    "run_events",
    "written_by_forkline",
]

#: The Forkline schema version every run shows (Recording v0: "every run records 0.1").
FORKLINE_SCHEMA_VERSION: Final = "0.1"

#: Forkline's columns, in Forkline's order.
RUN_COLUMNS: Final = (
    "run_id",
    "schema_version",
    "entrypoint",
    "started_at",
    "ended_at",
    "status",
    "python_version",
    "platform",
    "cwd",
)
EVENT_COLUMNS: Final = ("event_id", "run_id", "ts", "type", "payload")

_SELECT_EVENTS: Final = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE run_id = ? ORDER BY event_id"


class Host(Protocol):
    """What ``run_events`` reads of the store (``store.Store``, above this module)."""

    @property
    def log(self) -> EventLog: ...


def has_forkline_tables(file: ForeignFile) -> bool:
    """Whether a database holds Forkline's own ``runs`` and ``events`` tables (Recording v0's
    columns at least; Forkline 0.5.0 adds ``runs.forkline_version``), i.e. Forkline wrote it."""
    runs, events = file.columns("runs") or set(), file.columns("events") or set()
    return set(RUN_COLUMNS) <= runs and set(EVENT_COLUMNS) <= events


def written_by_forkline(path: str) -> bool:
    """Whether the file at ``path`` is a runs.db that Forkline itself wrote.

    Opened ``immutable``: a read-only connection to a WAL-mode file would create -wal and
    -shm files beside it that it cannot remove, and the refused file must stay untouched.
    (Forkline writes with a rollback journal; its tables are in the file itself.)
    """
    try:
        file = open_foreign(path, immutable=True)
    except ForeignFileError:
        return False
    try:
        return has_forkline_tables(file)
    except ForeignFileError:
        return False
    finally:
        file.close()


def import_hint(path: str) -> str:
    """What to say when a Forkline runs.db is opened as a store: the two commands that import it."""
    moved = f"{path}.forkline"
    return (
        f"{path} is a runs.db written by Forkline itself; forkline_es leaves it untouched. "
        f"Move it aside and import its runs: mv {path} {moved} && "
        f"forkline-es --db {path} import-forkline {moved}"
    )


# ``events`` reads each payload with a correlated subquery whose only way into ``payload`` is
# the event's key range (the unary ``+`` keeps ``slot`` from serving as an index key). As a
# LEFT JOIN, the planner built an automatic index on ``slot`` instead, which every row of the
# table matches: each event then read every value, and ``SELECT * FROM events`` took 22 s at
# 16,000 events. The subquery also lets ``WHERE run_id = ?`` use the log's (run_id, seq) index.
VIEWS_DDL: Final = f"""
DROP VIEW IF EXISTS runs;
CREATE VIEW runs AS
SELECT
    s.run_id AS run_id,
    '{FORKLINE_SCHEMA_VERSION}' AS schema_version,
    s.workflow AS entrypoint,
    s.started_at AS started_at,
    s.ended_at AS ended_at,
    CASE s.status
        WHEN 'succeeded' THEN 'success'
        WHEN 'failed' THEN
            CASE json_extract(s.state, '$.code') WHEN 'error' THEN 'error' ELSE 'failure' END
        WHEN 'cancelled' THEN 'cancelled'
        WHEN 'stopped' THEN 'stopped'
    END AS status,
    json_extract(s.state, '$.env.python_version') AS python_version,
    json_extract(s.state, '$.env.platform') AS platform,
    json_extract(s.state, '$.env.cwd') AS cwd
FROM run_summary AS s
ORDER BY s.started_key, s.run_id;

DROP VIEW IF EXISTS events;
CREATE VIEW events AS
SELECT
    l.position AS event_id,
    l.run_id AS run_id,
    l.at AS ts,
    json_extract(l.body, '$.event_type') AS type,
    (SELECT p.value FROM payload AS p WHERE p.id {payload_ids("l.position")} AND +p.slot = 'payload')
        AS payload
FROM log AS l
WHERE l.kind = 'forkline-logged'
ORDER BY l.position;
"""


def run_events(store: Host, run_id: str) -> list[tuple[Any, ...]]:
    """One run's rows of the ``events`` view (``EVENT_COLUMNS``) in ``event_id`` order, read in
    one snapshot. ``payload`` is the stored canonical JSON text, None once retention removed it:
    kept as text so that a logged ``null`` stays distinguishable from a removed value."""
    with store.log.snapshot() as cur:
        return [tuple(row) for row in cur.execute(_SELECT_EVENTS, (run_id,))]


class ForklineViews:
    """The projector that owns the ``runs`` and ``events`` views; it folds nothing.

    Listed by ``store.extra_projectors()`` so that opening a store creates the views and a
    rebuild recreates them. Bump ``version`` when ``VIEWS_DDL`` changes.
    """

    name: str = "forkline-views"
    # 3: events reads each value by a subquery on its key range (was quadratic); 4: runs in
    # time order (started_key), not in the text order of trimmed fractions (.7Z after .71Z)
    version: int = 4
    ddl: str = VIEWS_DDL
    tables: tuple[str, ...] = ()
    events: tuple[type[EventBody], ...] = ()

    def apply(self, cur: Cursor, row: RowHeader, event: EventBody) -> None:
        """Nothing to fold: the views read the log and ``run_summary`` directly."""
