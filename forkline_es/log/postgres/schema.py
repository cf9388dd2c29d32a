"""The log-level tables on PostgreSQL, their rules as plpgsql triggers, and the read barrier.

The tables are SQLite's latest layout (``forkline_es.log.schema``, version 5) in
PostgreSQL's types: the same columns, keys and indexes; bodies and values ``text``, never
``jsonb`` (which reorders keys and would change the documents and their digests); every
text column ``COLLATE "C"``, so run ids and step paths compare in code-point order as
SQLite's BINARY does, whatever the database's locale. ``SCHEMA_VERSION`` counts this
layout's own versions, kept in ``forkline_es_schema``.

Positions and the horizon (docs/postgres.md says why): a BEFORE INSERT trigger on ``log``
takes ``pg_advisory_xact_lock_shared(BARRIER)`` and only then the position
``nextval('log_position')`` (a sequence with CACHE 1: a cached block per session would give
a later transaction a lower position). A follower's horizon (``log_horizon()``) takes the same
lock exclusively and reads the end of the log while it holds it: once it has the lock,
every transaction that took a position has committed or rolled back, and no position is
given out until it lets go, every later one higher; so every row at or below that end is
committed and visible, and none will join it. Writers take the
lock shared and never wait for each other.

Each rule of the SQLite triggers holds here for any client: no UPDATE of log or payload
rows (``INSERT ... ON CONFLICT DO UPDATE`` is an UPDATE, so it is refused too; a plain
INSERT never replaces a row in PostgreSQL, its key clash is a unique violation); DELETE of
a log row only for an evicted run and only after its values; DELETE of a value only for an
evicted run or when a ``payloads-removed`` event of its run names it; a value only for an
existing log row; deleting an eviction record keeps its position in ``log_end``; no row of
an evicted run (``EVICTED_RUN_REFUSED``); and TRUNCATE, which fires no row trigger, is
refused on the three tables whose rows carry these rules.
"""

from __future__ import annotations

from typing import Final

from forkline_es.log.schema import APPLICATION_ID, EVICTED_RUN_REFUSED, NOT_ITS_NEXT_ROW, SLOTS_PER_EVENT

__all__ = [
    "BARRIER",
    "CHECK_LOCKS",
    "END_OF_LOG",
    "MIGRATIONS",
    "RUN_LOCKS",
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "TABLES",
    "VERSION_TABLE",
    "migration",
]

#: The advisory lock (one bigint key) of the read barrier: appends hold it shared from their
#: first row to their commit; ``horizon`` takes it exclusively for a moment.
BARRIER: Final = (APPLICATION_ID << 32) | 1
#: The advisory lock held while the schema is created or migrated (several hosts opening at once).
SCHEMA_LOCK: Final = (APPLICATION_ID << 32) | 2
#: The class of the session advisory lock a check holds on its throwaway schema (two int4
#: keys: this and ``hashtext(schema name)``) while it uses it; ``gc`` drops a check schema
#: only when it can take that lock, i.e. when the check that made it has gone.
CHECK_LOCKS: Final = APPLICATION_ID + 1
#: The class of the per-run advisory locks (two int4 keys: this and ``hashtext(run_id)``): an
#: append holds its run's shared, recording an eviction takes it exclusively, so an append
#: in flight when its run is evicted either commits before the eviction deletes the run's
#: rows (which then go too) or sees the eviction and is refused.
RUN_LOCKS: Final = APPLICATION_ID

#: The table that holds this layout's version (one row); its absence means a new database.
VERSION_TABLE: Final = "forkline_es_schema"
#: The tables the migrations make, which a database of another application must not hold.
TABLES: Final = (
    "log",
    "payload",
    "eviction",
    "log_end",
    "consumer",
    "projector",
    "run_checkpoint",
    "run_checkpoint_piece",
    "record_text",
    VERSION_TABLE,
)

#: The end of the log, as ``forkline_es.log.schema.END_OF_LOG``: the largest of the retained
#: rows', the evictions' and ``log_end``'s positions.
END_OF_LOG: Final = (
    "(SELECT coalesce(max(top), 0) FROM (SELECT max(position) AS top FROM log "
    "UNION ALL SELECT max(position) FROM eviction UNION ALL SELECT position FROM log_end) AS ends)"
)

_END_OF_LOG_IN_S: Final = (
    "(SELECT coalesce(max(top), 0) FROM (SELECT max(position) AS top FROM {s}.log "
    "UNION ALL SELECT max(position) FROM {s}.eviction UNION ALL SELECT position FROM {s}.log_end) AS ends)"
)

# {s} is the schema the tables are created in, quoted: the trigger functions name their
# tables through it, so they hold whatever search_path the writing client has.
_V1: Final = f"""
CREATE TABLE {VERSION_TABLE} (
    id          integer PRIMARY KEY CHECK (id = 1),
    application bigint  NOT NULL,                    -- {APPLICATION_ID}: "FKes"
    version     integer NOT NULL
);
INSERT INTO {VERSION_TABLE} (id, application, version) VALUES (1, {APPLICATION_ID}, 0);

-- CACHE 1: a block of positions cached by one session would be given out after a higher
-- position another session took and committed; the read barrier needs them in order.
CREATE SEQUENCE log_position AS bigint CACHE 1 NO CYCLE;

CREATE TABLE log (
    position   bigint  PRIMARY KEY,                  -- global, never reused: log_insert_rules
    run_id     text    COLLATE "C" NOT NULL,
    seq        bigint  NOT NULL CHECK (seq >= 1),    -- per run, consecutive from 1
    entry      bigint  CHECK (entry >= 1),           -- run record entry seq; NULL if not an entry
    generation bigint  NOT NULL CHECK (generation >= 0),
    kind       text    COLLATE "C" NOT NULL,
    at         text    COLLATE "C" NOT NULL,         -- canonical UTC timestamp
    key        text    COLLATE "C" NOT NULL,         -- idempotency key of the call
    body       text    COLLATE "C" NOT NULL,         -- canonical JSON of the event Struct (never jsonb)
    digest     text    COLLATE "C" NOT NULL,         -- sha256 of this row's header and body
    prev       text    COLLATE "C",                  -- digest of the run's previous row
    CONSTRAINT log_run_id_seq_key UNIQUE (run_id, seq)
);
-- The completion feed: run-concluded rows by position.
CREATE INDEX log_concluded ON log (position, run_id) WHERE kind = 'run-concluded';

CREATE TABLE payload (
    id       bigint PRIMARY KEY,                     -- position * {SLOTS_PER_EVENT} + its place in the event
    position bigint NOT NULL,                        -- the log row (payload_insert_rules)
    slot     text   COLLATE "C" NOT NULL,
    value    text   COLLATE "C" NOT NULL,            -- canonical JSON of the typed value
    CHECK (id / {SLOTS_PER_EVENT} = position)
);

CREATE TABLE eviction (
    run_id   text   COLLATE "C" PRIMARY KEY,
    position bigint NOT NULL,                        -- the last log position of the run
    at       text   COLLATE "C" NOT NULL,
    reason   text   COLLATE "C" NOT NULL,
    policy   text   COLLATE "C"
);
CREATE INDEX eviction_position ON eviction (position);

CREATE TABLE log_end (
    id       integer PRIMARY KEY CHECK (id = 1),
    position bigint  NOT NULL
);

CREATE TABLE consumer (                              -- named checkpoints of the completion feed
    name          text   COLLATE "C" PRIMARY KEY,
    position      bigint NOT NULL,
    registered_at text   COLLATE "C" NOT NULL
);

CREATE TABLE projector (
    name     text   COLLATE "C" PRIMARY KEY,
    version  bigint NOT NULL,
    position bigint                                  -- NULL: live; N: folded through N only
);

-- The sequence never falls behind a position the tables hold: an explicit position (a copy
-- of another store keeps its positions) or an eviction record or log end copied in moves it on.
CREATE FUNCTION log_position_past(p bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p > (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM {{s}}.log_position) THEN
        PERFORM setval('{{s}}.log_position', p);
    END IF;
END $$;

CREATE FUNCTION log_insert_rules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Before the position, so that waiting for an eviction holds no reader's horizon up.
    PERFORM pg_advisory_xact_lock_shared({RUN_LOCKS}, hashtext(NEW.run_id));
    IF EXISTS (SELECT 1 FROM {{s}}.eviction WHERE run_id = NEW.run_id)
       AND NOT EXISTS (SELECT 1 FROM {{s}}.log WHERE run_id = NEW.run_id AND seq = NEW.seq) THEN
        RAISE EXCEPTION 'forkline_es: {EVICTED_RUN_REFUSED}: the run is evicted and takes no more rows'
            USING ERRCODE = 'restrict_violation';
    END IF;
    PERFORM pg_advisory_xact_lock_shared({BARRIER});
    IF NEW.position IS NULL THEN
        NEW.position := nextval('{{s}}.log_position');
    ELSE
        IF NEW.position <= {_END_OF_LOG_IN_S} THEN
            RAISE EXCEPTION 'forkline_es: a log row given its position must be past the end of the log'
                USING ERRCODE = 'restrict_violation';
        END IF;
        PERFORM {{s}}.log_position_past(NEW.position);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER log_insert_rules BEFORE INSERT ON log FOR EACH ROW EXECUTE FUNCTION log_insert_rules();

CREATE FUNCTION log_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'forkline_es: log rows are never updated' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER log_is_append_only BEFORE UPDATE ON log FOR EACH ROW EXECUTE FUNCTION log_is_append_only();

CREATE FUNCTION log_deletes_only_evicted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {{s}}.eviction WHERE run_id = OLD.run_id) THEN
        RAISE EXCEPTION 'forkline_es: log rows are deleted only after their run''s eviction is recorded'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM {{s}}.payload
               WHERE id BETWEEN OLD.position * {SLOTS_PER_EVENT}
                            AND OLD.position * {SLOTS_PER_EVENT} + {SLOTS_PER_EVENT - 1}) THEN
        RAISE EXCEPTION 'forkline_es: a log row is deleted only after its payload values'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER log_deletes_only_evicted BEFORE DELETE ON log
FOR EACH ROW EXECUTE FUNCTION log_deletes_only_evicted();

CREATE FUNCTION payload_insert_rules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {{s}}.log WHERE position = NEW.position) THEN
        RAISE EXCEPTION 'forkline_es: a payload value needs its log row, and none has this position'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER payload_belongs_to_a_log_row BEFORE INSERT ON payload
FOR EACH ROW EXECUTE FUNCTION payload_insert_rules();

CREATE FUNCTION payload_is_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'forkline_es: payload values are never updated' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER payload_is_immutable BEFORE UPDATE ON payload
FOR EACH ROW EXECUTE FUNCTION payload_is_immutable();

CREATE FUNCTION payload_deletes_only_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM {{s}}.log AS owner JOIN {{s}}.eviction AS e ON e.run_id = owner.run_id
        WHERE owner.position = OLD.position
    ) AND NOT EXISTS (
        SELECT 1 FROM {{s}}.log AS owner
        JOIN {{s}}.log AS r ON r.run_id = owner.run_id AND r.kind = 'payloads-removed'
        CROSS JOIN LATERAL jsonb_array_elements(r.body::jsonb -> 'removed') AS j(pair)
        WHERE owner.position = OLD.position
          AND j.pair ->> 0 = OLD.position::text
          AND j.pair ->> 1 = OLD.slot
    ) THEN
        RAISE EXCEPTION 'forkline_es: a payload value is deleted only after its removal is recorded'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER payload_deletes_only_recorded BEFORE DELETE ON payload
FOR EACH ROW EXECUTE FUNCTION payload_deletes_only_recorded();

CREATE FUNCTION eviction_insert_rules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Waits for the run's appends in flight; later ones wait for this transaction, then
    -- see the record and are refused.
    PERFORM pg_advisory_xact_lock({RUN_LOCKS}, hashtext(NEW.run_id));
    PERFORM {{s}}.log_position_past(NEW.position);
    RETURN NEW;
END $$;
CREATE TRIGGER eviction_insert_rules BEFORE INSERT ON eviction
FOR EACH ROW EXECUTE FUNCTION eviction_insert_rules();

CREATE FUNCTION eviction_keeps_end_of_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{s}}.log_end AS kept (id, position) VALUES (1, OLD.position)
    ON CONFLICT (id) DO UPDATE SET position = greatest(kept.position, excluded.position);
    RETURN OLD;
END $$;
CREATE TRIGGER eviction_keeps_end_of_log BEFORE DELETE ON eviction
FOR EACH ROW EXECUTE FUNCTION eviction_keeps_end_of_log();

CREATE FUNCTION log_end_moves_the_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM {{s}}.log_position_past(NEW.position);
    RETURN NEW;
END $$;
CREATE TRIGGER log_end_moves_the_sequence BEFORE INSERT OR UPDATE ON log_end
FOR EACH ROW EXECUTE FUNCTION log_end_moves_the_sequence();

-- The read barrier's reader side (connection.horizon). The lock is granted before the end
-- of the log is read, and held while it is: a statement of a VOLATILE function takes a
-- snapshot of its own at READ COMMITTED, so the second one sees every row whose position
-- was given out before the lock was granted (all committed or rolled back by then), and
-- no position is given out while the lock is held. Released when the caller's transaction
-- ends: at once outside one. A snapshot older than the lock would miss rows below the end.
CREATE FUNCTION log_horizon() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'forkline_es: the horizon is read at read committed, not at %: take it first',
            current_setting('transaction_isolation') USING ERRCODE = 'feature_not_supported';
    END IF;
    PERFORM pg_advisory_xact_lock({BARRIER});
    RETURN {_END_OF_LOG_IN_S};
END $$;

-- TRUNCATE fires no row trigger: it would empty the tables past every rule above.
CREATE FUNCTION never_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'forkline_es: % is never truncated (its rows go one by one, by the rules)', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER log_is_never_truncated BEFORE TRUNCATE ON log
FOR EACH STATEMENT EXECUTE FUNCTION never_truncated();
CREATE TRIGGER payload_is_never_truncated BEFORE TRUNCATE ON payload
FOR EACH STATEMENT EXECUTE FUNCTION never_truncated();
CREATE TRIGGER eviction_is_never_truncated BEFORE TRUNCATE ON eviction
FOR EACH STATEMENT EXECUTE FUNCTION never_truncated();
"""

# Version 2: run checkpoints (SQLite's version 6, ``forkline_es.log.schema``): derived data
# that a resume checks against the log, with no rule of their own; eviction deletes them.
_V2: Final = """
CREATE TABLE run_checkpoint (
    run_id text    COLLATE "C" PRIMARY KEY,
    seq    bigint  NOT NULL,                         -- the run's row the state is after
    digest text    COLLATE "C" NOT NULL,             -- that row's digest in the log
    format integer NOT NULL,                         -- recording.checkpoint.FORMAT
    head   bytea   NOT NULL                          -- msgpack: scalars and the pieces' digests
);
CREATE TABLE run_checkpoint_piece (
    run_id text    COLLATE "C" NOT NULL,
    piece  bigint  NOT NULL,                         -- i >= 0: rows; -1 - j: paths
    data   bytea   NOT NULL,
    PRIMARY KEY (run_id, piece)
);
"""

# Version 3: stored run record texts (SQLite's version 7, ``forkline_es.records.stored``).
# The trigger makes an insert wait for the run's appends in flight (the per-run lock they
# hold shared, taken here exclusively, as an eviction does) and then, in a snapshot that
# sees them, keeps the row only while its seq is still the run's last row with its digest:
# a text built before a payload removal committed is never written after the removal
# deleted the run's texts.
_V3: Final = f"""
CREATE TABLE record_text (
    run_id text    COLLATE "C" NOT NULL,
    seq    bigint  NOT NULL,                         -- the run's last row when it was built
    digest text    COLLATE "C" NOT NULL,             -- that row's digest in the log
    format bigint  NOT NULL,                         -- the projector versions' key
    size   bigint  NOT NULL,                         -- the document's length in UTF-8 bytes
    text   bytea   NOT NULL,                         -- zlib (level 1) of the canonical document
    PRIMARY KEY (run_id, seq, format)
);

CREATE FUNCTION record_text_insert_rules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock({RUN_LOCKS}, hashtext(NEW.run_id));
    IF NOT EXISTS (SELECT 1 FROM {{s}}.log
                   WHERE run_id = NEW.run_id AND seq = NEW.seq AND digest = NEW.digest)
       OR EXISTS (SELECT 1 FROM {{s}}.log WHERE run_id = NEW.run_id AND seq > NEW.seq) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER record_text_insert_rules BEFORE INSERT ON record_text
FOR EACH ROW EXECUTE FUNCTION record_text_insert_rules();
"""

# Version 4 (SQLite's version 8, ``forkline_es.log.schema``): a row after a run's first
# follows the row the log holds at the seq before it (there, with the digest its prev
# names). A handle taken before its run was evicted and its tombstone purged, or before
# the id started again as a new run, is refused instead of leaving a run without its first
# rows. Checked in ``log_insert_rules``, one index look-up for a row after the run's first
# (the seq taken only when it fails): a trigger of its own, with the run's three look-ups
# in one query, cost eight durable writers about a seventh of their appends (paired).
_V4: Final = f"""
CREATE OR REPLACE FUNCTION log_insert_rules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Before the position, so that waiting for an eviction holds no reader's horizon up.
    PERFORM pg_advisory_xact_lock_shared({RUN_LOCKS}, hashtext(NEW.run_id));
    IF EXISTS (SELECT 1 FROM {{s}}.eviction WHERE run_id = NEW.run_id)
       AND NOT EXISTS (SELECT 1 FROM {{s}}.log WHERE run_id = NEW.run_id AND seq = NEW.seq) THEN
        RAISE EXCEPTION 'forkline_es: {EVICTED_RUN_REFUSED}: the run is evicted and takes no more rows'
            USING ERRCODE = 'restrict_violation';
    END IF;
    -- One look-up more, for a row after the run's first; the seq taken is the unique key's.
    IF NEW.seq > 1
       AND NOT EXISTS (SELECT 1 FROM {{s}}.log WHERE run_id = NEW.run_id AND seq = NEW.seq - 1
                       AND digest IS NOT DISTINCT FROM NEW.prev)
       AND NOT EXISTS (SELECT 1 FROM {{s}}.log WHERE run_id = NEW.run_id AND seq = NEW.seq) THEN
        RAISE EXCEPTION 'forkline_es: conflict: {NOT_ITS_NEXT_ROW}' USING ERRCODE = 'restrict_violation';
    END IF;
    PERFORM pg_advisory_xact_lock_shared({BARRIER});
    IF NEW.position IS NULL THEN
        NEW.position := nextval('{{s}}.log_position');
    ELSE
        IF NEW.position <= {_END_OF_LOG_IN_S} THEN
            RAISE EXCEPTION 'forkline_es: a log row given its position must be past the end of the log'
                USING ERRCODE = 'restrict_violation';
        END IF;
        PERFORM {{s}}.log_position_past(NEW.position);
    END IF;
    RETURN NEW;
END $$;
"""

#: ``MIGRATIONS[n]`` takes a database from version n to n + 1 in one transaction; ``{s}``
#: stands for the quoted schema (``migration``).
MIGRATIONS: Final[tuple[str, ...]] = (_V1, _V2, _V3, _V4)

SCHEMA_VERSION: Final = len(MIGRATIONS)


def migration(version: int, schema: str) -> str:
    """The statements of step ``version`` -> ``version + 1`` for the tables in ``schema``."""
    quoted = '"' + schema.replace('"', '""') + '"'
    return MIGRATIONS[version].replace("{s}", quoted)
