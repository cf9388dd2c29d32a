"""The database layout, and forward migrations stepped through ``PRAGMA user_version``.

The log and the payload values are the truth; every other table is a projection that
``forkline_es.projections`` can drop and refold. ``eviction`` is the store-level
stream that outlives an evicted run (decisions: run-not-retained).

A migration that rebuilds a table runs with foreign keys off and the legacy rename rules
on (``connection._migrate``), the way SQLite's "other kinds of table schema changes"
procedure asks, so that references to the table by name keep pointing at the new one.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "APPLICATION_ID",
    "END_OF_LOG",
    "EVICTED_RUN_REFUSED",
    "MIGRATIONS",
    "NOT_ITS_NEXT_ROW",
    "RUN_CHECKPOINT_DDL",
    "SCHEMA_VERSION",
    "SLOTS_PER_EVENT",
    "payload_ids",
]

#: ``PRAGMA application_id`` of a forkline_es database: "FKes" in ASCII.
APPLICATION_ID: Final = 0x464B6573

# The rules of the payload table, made by version 1 and again by version 3's new table.
_PAYLOAD_TRIGGERS: Final = """
CREATE TRIGGER payload_is_immutable BEFORE UPDATE ON payload
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: payload values are never updated');
END;
CREATE TRIGGER payload_deletes_only_recorded BEFORE DELETE ON payload
WHEN NOT EXISTS (
    SELECT 1 FROM log AS owner JOIN eviction AS e ON e.run_id = owner.run_id
    WHERE owner.position = OLD.position
) AND NOT EXISTS (
    SELECT 1 FROM log AS owner
    JOIN log AS r ON r.run_id = owner.run_id AND r.kind = 'payloads-removed'
    JOIN json_each(r.body, '$.removed') AS j
    WHERE owner.position = OLD.position
      AND json_extract(j.value, '$[0]') = OLD.position
      AND json_extract(j.value, '$[1]') = OLD.slot
)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: a payload value is deleted only after its removal is recorded');
END;
"""

_V1: Final = f"""
CREATE TABLE log (
    position   INTEGER PRIMARY KEY AUTOINCREMENT,  -- global, never reused
    run_id     TEXT    NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq >= 1),  -- per run, consecutive from 1
    entry      INTEGER CHECK (entry >= 1),          -- run record entry seq; NULL if not an entry
    generation INTEGER NOT NULL CHECK (generation >= 0),
    kind       TEXT    NOT NULL,
    at         TEXT    NOT NULL,                    -- canonical UTC timestamp
    key        TEXT    NOT NULL,                    -- idempotency key of the call
    body       TEXT    NOT NULL,                    -- canonical JSON of the event Struct
    digest     TEXT    NOT NULL,                    -- sha256 of this row's header and body
    prev       TEXT,                                -- digest of the run's previous row
    UNIQUE (run_id, seq)
);

CREATE TABLE payload (
    position INTEGER NOT NULL REFERENCES log (position),
    slot     TEXT    NOT NULL,
    value    TEXT    NOT NULL,                      -- canonical JSON of the typed value
    PRIMARY KEY (position, slot)
) WITHOUT ROWID;

CREATE TABLE eviction (
    run_id   TEXT PRIMARY KEY,
    position INTEGER NOT NULL,                      -- the last log position of the run
    at       TEXT NOT NULL,
    reason   TEXT NOT NULL,
    policy   TEXT
);

CREATE TRIGGER log_is_append_only BEFORE UPDATE ON log
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: log rows are never updated');
END;

CREATE TRIGGER log_deletes_only_evicted BEFORE DELETE ON log
WHEN NOT EXISTS (SELECT 1 FROM eviction WHERE run_id = OLD.run_id)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: log rows are deleted only after their run''s eviction is recorded');
END;

{_PAYLOAD_TRIGGERS}
-- The completion feed (forkline_es.retention.feed): run-concluded rows by position.
CREATE INDEX log_concluded ON log (position, run_id) WHERE kind = 'run-concluded';

CREATE TABLE consumer (                             -- named checkpoints of the completion feed
    name          TEXT PRIMARY KEY,
    position      INTEGER NOT NULL,                 -- completions up to here are acknowledged
    registered_at TEXT NOT NULL
);

CREATE TABLE projector (
    name     TEXT PRIMARY KEY,
    version  INTEGER NOT NULL,
    position INTEGER NOT NULL                       -- last log position folded
);
"""

#: The end of the log: the highest position ever given out. Eviction deletes a run's rows
#: only after recording its last position, and deleting an eviction record keeps its
#: position in ``log_end`` (a trigger); so the end is the largest of the retained rows',
#: the evictions' and ``log_end``'s positions, even when the newest run was evicted and
#: forgotten.
END_OF_LOG: Final = (
    "(SELECT coalesce(max(top), 0) FROM (SELECT max(position) AS top FROM log "
    "UNION ALL SELECT max(position) FROM eviction UNION ALL SELECT position FROM log_end))"
)

# Version 2 drops AUTOINCREMENT from the log: its counter row in sqlite_sequence was a
# fourth page written by every append (about 15% of a small event's commit). A new row's
# position is END_OF_LOG + 1 instead, given by the insert itself, so positions are still
# never reused. The rows are copied as they are: same positions, bodies and digests.
_LOG_V2: Final = """
CREATE TABLE log (
    position   INTEGER PRIMARY KEY,                 -- global, never reused: END_OF_LOG + 1
    run_id     TEXT    NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq >= 1),  -- per run, consecutive from 1
    entry      INTEGER CHECK (entry >= 1),          -- run record entry seq; NULL if not an entry
    generation INTEGER NOT NULL CHECK (generation >= 0),
    kind       TEXT    NOT NULL,
    at         TEXT    NOT NULL,                    -- canonical UTC timestamp
    key        TEXT    NOT NULL,                    -- idempotency key of the call
    body       TEXT    NOT NULL,                    -- canonical JSON of the event Struct
    digest     TEXT    NOT NULL,                    -- sha256 of this row's header and body
    prev       TEXT,                                -- digest of the run's previous row
    UNIQUE (run_id, seq)
);
"""

_V2: Final = f"""
-- Where END_OF_LOG keeps the end once the evidence of it is gone (a purged eviction record);
-- version 1 kept it in sqlite_sequence, which goes with the old table. The trigger holds
-- for any client, sqlite3 runs.db included.
CREATE TABLE log_end (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    position INTEGER NOT NULL
);
INSERT INTO log_end (id, position) SELECT 1, seq FROM sqlite_sequence WHERE name = 'log';

CREATE TRIGGER eviction_keeps_end_of_log BEFORE DELETE ON eviction
BEGIN
    INSERT INTO log_end (id, position) VALUES (1, OLD.position)
    ON CONFLICT (id) DO UPDATE SET position = max(position, excluded.position);
END;

ALTER TABLE log RENAME TO log_v1;
{_LOG_V2}
INSERT INTO log (position, run_id, seq, entry, generation, kind, at, key, body, digest, prev)
SELECT position, run_id, seq, entry, generation, kind, at, key, body, digest, prev FROM log_v1
ORDER BY position;
DROP TABLE log_v1;

CREATE TRIGGER log_is_append_only BEFORE UPDATE ON log
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: log rows are never updated');
END;

CREATE TRIGGER log_deletes_only_evicted BEFORE DELETE ON log
WHEN NOT EXISTS (SELECT 1 FROM eviction WHERE run_id = OLD.run_id)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: log rows are deleted only after their run''s eviction is recorded');
END;

CREATE INDEX log_concluded ON log (position, run_id) WHERE kind = 'run-concluded';

-- END_OF_LOG reads the highest evicted position with one seek.
CREATE INDEX eviction_position ON eviction (position);

-- A projector's position is NULL while it is live: every append folds it in its own
-- transaction, so it is at the end of the log without a write of its own (the per-append
-- UPDATE was another page in every commit). A number N says only the rows through N are
-- folded; the next open folds the rest and sets it back to NULL.
CREATE TABLE projector_v2 (
    name     TEXT PRIMARY KEY,
    version  INTEGER NOT NULL,
    position INTEGER                                -- NULL: live; N: folded through N only
);
INSERT INTO projector_v2 (name, version, position)
SELECT name, version, CASE WHEN position >= {END_OF_LOG} THEN NULL ELSE position END FROM projector;
DROP TABLE projector;
ALTER TABLE projector_v2 RENAME TO projector;
"""

#: The most payload values one event can carry: the k-th value an event carries (from 0, in
#: the order it was appended) is the ``payload`` row with id ``position * SLOTS_PER_EVENT + k``.
SLOTS_PER_EVENT: Final = 16


def payload_ids(position: str) -> str:
    """SQL condition on ``id`` selecting the payload rows of the event at ``position`` (an SQL
    expression): a range of the table's own key, so a lookup or join is one seek."""
    first = f"{position} * {SLOTS_PER_EVENT}"
    return f"BETWEEN {first} AND {first} + {SLOTS_PER_EVENT - 1}"


# Version 3 moves payload values out of a WITHOUT ROWID table, which keeps at most about a
# thousand bytes of a row on its page (a quarter of the usual limit) and spills the rest to
# an overflow page: a 1 KB prompt cost an append twice the writes, ~30 us more per event. A
# rowid table keeps rows up to a page long in place; its key encodes (position, slot) as
# ``payload_ids`` ranges, so it stays one B-tree written per append, with no second index.
# The foreign key to the log goes too: enforcing it on a log row's delete looks up the
# child column, which has no index now (a scan of every value per deleted row). Two
# triggers hold the same rule through the key range, and for any client, where a foreign
# key holds only on connections that turned enforcement on (the sqlite3 shell does not).
_V3: Final = f"""
CREATE TABLE payload_v3 (
    id       INTEGER PRIMARY KEY,                   -- position * {SLOTS_PER_EVENT} + its place in the event
    position INTEGER NOT NULL,                      -- the log row (payload_belongs_to_a_log_row)
    slot     TEXT    NOT NULL,
    value    TEXT    NOT NULL,                      -- canonical JSON of the typed value
    CHECK (id / {SLOTS_PER_EVENT} = position)
);
-- Before the copy, so that a value without its log row stops the migration.
CREATE TRIGGER payload_belongs_to_a_log_row BEFORE INSERT ON payload_v3
WHEN NOT EXISTS (SELECT 1 FROM log WHERE position = NEW.position)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: a payload value needs its log row, and none has this position');
END;
INSERT INTO payload_v3 (id, position, slot, value)
SELECT position * {SLOTS_PER_EVENT} + row_number() OVER (PARTITION BY position ORDER BY slot) - 1,
       position, slot, value
FROM payload ORDER BY position, slot;
DROP TABLE payload;
ALTER TABLE payload_v3 RENAME TO payload;
{_PAYLOAD_TRIGGERS}
-- Only an evicted run's rows can be deleted at all (log_deletes_only_evicted says so first).
CREATE TRIGGER log_deletes_after_its_values BEFORE DELETE ON log
WHEN EXISTS (SELECT 1 FROM eviction WHERE run_id = OLD.run_id)
 AND EXISTS (SELECT 1 FROM payload WHERE id {payload_ids("OLD.position")})
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: a log row is deleted only after its payload values');
END;
"""

# INSERT OR REPLACE (REPLACE INTO) deletes the row it replaces without firing DELETE
# triggers unless the connection turned recursive_triggers on, which the sqlite3 shell
# does not: refused here for any client, before the constraint would be resolved. A seq
# clash is an append race as well; its message names the constraint as SQLite's own does,
# so the writer gets a conflict (sqlite.translate) either way.
_V4: Final = """
CREATE TRIGGER log_is_never_replaced BEFORE INSERT ON log
WHEN EXISTS (SELECT 1 FROM log WHERE position = NEW.position)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: log rows are never replaced');
END;
CREATE TRIGGER log_seq_is_never_replaced BEFORE INSERT ON log
WHEN EXISTS (SELECT 1 FROM log WHERE run_id = NEW.run_id AND seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: log.run_id, log.seq is taken; log rows are never replaced');
END;
CREATE TRIGGER payload_is_never_replaced BEFORE INSERT ON payload
WHEN EXISTS (SELECT 1 FROM payload WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: payload values are never replaced');
END;
"""

#: What ``sqlite.translate`` (and ``postgres.connection.translate``) finds in the message
#: of ``log_refuses_evicted_runs``.
EVICTED_RUN_REFUSED: Final = "run-not-retained"

# Version 5: a run whose eviction is recorded takes no more rows, whatever client writes.
# Before, a handle on a concluded run went on appending observations, artifacts and
# manifests after another process evicted the run: orphan rows at seq 5, 6, ... of a run
# whose start was gone, which a later run under the same id took for its own once the
# tombstone was purged. The check is one seek in ``eviction``'s key per row (1-2% of a
# one-event append, ~5% of a row in a large batch); it steps aside for version 4's
# refusals of a replaced row, so that such an insert keeps the message it had (those
# lookups run only for an evicted run).
#
# Rows a version-4 store already took for an evicted run are deleted here, their values
# first: their run's eviction is recorded, the one case where the log's rules let a row
# go. The end of the log moves into log_end first, so their positions are never given out
# again; the projectors are marked outdated only when there were any, so the next open
# refolds the projections without them (their artifact, manifest and observation rows;
# gc then removes the files no retained run references). Rows whose eviction record was
# purged before this version are left, as no rule lets them go: verify reports them
# (seq-gap at seq 1), resume_run answers run-not-found and a start under their id is refused.
_V5: Final = f"""
INSERT INTO log_end (id, position)
SELECT 1, l.position FROM log AS l JOIN eviction AS e ON e.run_id = l.run_id
WHERE true ORDER BY l.position DESC LIMIT 1
ON CONFLICT (id) DO UPDATE SET position = max(position, excluded.position);
UPDATE projector SET version = -1
WHERE EXISTS (SELECT 1 FROM log AS l JOIN eviction AS e ON e.run_id = l.run_id);
DELETE FROM payload WHERE id IN (
    SELECT p.id FROM eviction AS e JOIN log AS l ON l.run_id = e.run_id
    JOIN payload AS p ON p.id {payload_ids("l.position")}
);
DELETE FROM log WHERE run_id IN (SELECT run_id FROM eviction);

CREATE TRIGGER log_refuses_evicted_runs BEFORE INSERT ON log
WHEN EXISTS (SELECT 1 FROM eviction WHERE run_id = NEW.run_id)
 AND NOT EXISTS (SELECT 1 FROM log WHERE position = NEW.position)
 AND NOT EXISTS (SELECT 1 FROM log WHERE run_id = NEW.run_id AND seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: {EVICTED_RUN_REFUSED}: the run is evicted and takes no more rows');
END;
"""

# Version 6: run checkpoints (``recording.checkpoint``), a run handle's state saved every
# few thousand rows so that resume_run folds only the rows after it. Derived data, like a
# projection: written in the transaction of an append, deleted with the run's eviction,
# never copied, and taken by a resume only when the log's row at its seq has its digest.
# No trigger guards them: a lost or altered checkpoint costs a full fold, never a fact.
RUN_CHECKPOINT_DDL: Final = """
CREATE TABLE run_checkpoint (
    run_id TEXT    PRIMARY KEY,
    seq    INTEGER NOT NULL,                        -- the run's row the state is after
    digest TEXT    NOT NULL,                        -- that row's digest in the log
    format INTEGER NOT NULL,                        -- recording.checkpoint.FORMAT
    head   BLOB    NOT NULL                         -- msgpack: scalars and the pieces' digests
);
CREATE TABLE run_checkpoint_piece (
    run_id TEXT    NOT NULL,
    piece  INTEGER NOT NULL,                        -- i >= 0: rows; -1 - j: paths
    data   BLOB    NOT NULL,
    PRIMARY KEY (run_id, piece)
);
"""

# Version 7: stored run record texts (``records.stored``): a concluded run's finished
# document, zlib-compressed, as of its last row ``seq`` whose log digest is ``digest``,
# built by projector versions ``format`` (``projections.versions.key_of``). Derived data,
# like the checkpoints: a read takes it only when all three still hold, eviction and
# payload removal delete the run's rows, gc the stale ones; never copied, no trigger.
RECORD_TEXT_DDL: Final = """
CREATE TABLE record_text (
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,                        -- the run's last row when it was built
    digest TEXT    NOT NULL,                        -- that row's digest in the log
    format INTEGER NOT NULL,                        -- the projector versions' key
    size   INTEGER NOT NULL,                        -- the document's length in UTF-8 bytes
    text   BLOB    NOT NULL,                        -- zlib (level 1) of the canonical document
    PRIMARY KEY (run_id, seq, format)
);
"""

#: The words of the refusal ``log_rows_follow_their_run`` raises, which the backends make a ``Conflict``.
NOT_ITS_NEXT_ROW: Final = "the row before this seq is not the one this row follows"

# Version 8: a row after a run's first follows the row the log holds at the seq before it:
# that row is there with the digest this row's prev names. A handle taken before its run
# was evicted and its tombstone purged (or the id started again as a new run) would
# otherwise write rows at seq 4, 5, ... of a run with no seq 1 to 3, or after another
# run's seq 1. Rows of an evicted run are refused by ``log_refuses_evicted_runs`` (its
# tombstone kept), a seq taken by the unique key (``conflict``), as before.
_V8: Final = f"""
CREATE TRIGGER log_rows_follow_their_run BEFORE INSERT ON log
WHEN NEW.seq > 1
 AND NOT EXISTS (SELECT 1 FROM log WHERE run_id = NEW.run_id AND seq = NEW.seq - 1 AND digest IS NEW.prev)
 AND NOT EXISTS (SELECT 1 FROM log WHERE run_id = NEW.run_id AND seq = NEW.seq)
 AND NOT EXISTS (SELECT 1 FROM eviction WHERE run_id = NEW.run_id)
BEGIN
    SELECT RAISE(ABORT, 'forkline_es: conflict: {NOT_ITS_NEXT_ROW}');
END;
"""

#: ``MIGRATIONS[n]`` takes a database from user_version n to n + 1, in one transaction.
MIGRATIONS: Final[tuple[str, ...]] = (_V1, _V2, _V3, _V4, _V5, RUN_CHECKPOINT_DDL, RECORD_TEXT_DDL, _V8)

SCHEMA_VERSION: Final = len(MIGRATIONS)
