"""Opening a database: refuse what is not ours before writing a byte, then set it up.

Connection set-up is a short tuple of named steps applied to every connection, in the
manner of apsw's bestpractice module. Schema upgrades step ``PRAGMA user_version``
inside one transaction. apsw errors become forkline_es errors here and in
``forkline_es.log.sqlite``, nowhere else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import apsw

from forkline_es._logging import get_logger
from forkline_es.errors import StoreDamaged, StoreError, shown
from forkline_es.log import frozen
from forkline_es.log.checkpoint import LIMIT_BYTES, install
from forkline_es.log.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "BUSY_TIMEOUT_MS",
    "Connection",
    "Durability",
    "checkpoint_frames",
    "open_connection",
    "open_read_only",
]

#: An apsw connection as the SQLite modules see it. apsw's stubs type every column as a
#: union of SQLite values; the schema, not the driver, says what a column holds. Code above
#: the seam sees ``log.backend.Cursor`` only.
Connection: TypeAlias = Any

Durability = Literal["normal", "full"]

#: How long a writer waits for another writer's transaction before giving up.
BUSY_TIMEOUT_MS: Final = 30_000

_SQLITE_MAGIC: Final = b"SQLite format 3\x00"

_log = get_logger("forkline_es.log")


#: A waiting writer's longest sleep while the wait is short, and after ``_SHORT_WAIT``.
_SHORT_SLEEP: Final = 0.000_25
_LONG_SLEEP: Final = 0.002
_SHORT_WAIT: Final = 0.05


def _busy_waiter(timeout_ms: int) -> Callable[[int], bool]:
    """A busy handler that retries a locked write after short, growing sleeps.

    SQLite's own busy timeout sleeps 1, 2, 5, 10 ms and more between retries: under a few
    concurrent writers whose transactions last tens of microseconds, almost all of the
    time goes into those sleeps. This one starts at 20 µs and doubles up to 250 µs for the
    first 50 ms (another writer's transaction; a longer sleep left the lock free while
    every waiter slept: 4 writer processes recorded about 15% less, measured paired), then
    sleeps 2 ms (a checkpoint or a maintenance step), and gives up (the append becomes a
    ``conflict``) once ``timeout_ms`` has passed.
    """
    limit = timeout_ms / 1000
    started = 0.0

    def waiting(prior_calls: int) -> bool:
        nonlocal started
        now = time.monotonic()
        if prior_calls == 0:
            started = now
        elif now - started >= limit:
            return False
        waited = now - started
        longest = _SHORT_SLEEP if waited < _SHORT_WAIT else _LONG_SLEEP
        time.sleep(min(0.000_02 * (1 << min(prior_calls, 7)), longest, max(limit - waited, 0)))
        return True

    return waiting


def _no_double_quoted_strings(conn: Connection, durability: Durability) -> None:
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def _foreign_keys(conn: Connection, durability: Durability) -> None:
    conn.execute("PRAGMA foreign_keys = ON")


def checkpoint_frames(durability: Durability) -> int:
    """The WAL checkpoint interval, in frames, at ``durability`` (``log.checkpoint``)."""
    # At normal, an executor's event touches several pages (log, payload and projection
    # rows), most of them the same few hot pages again; checkpointing every 4,000 frames
    # (~16 MB of WAL) instead of SQLite's 1,000 writes each hot page back a quarter as
    # often (docs/benchmarks.md). At full, every commit's fsync pays for the WAL file
    # growing until its first checkpoint (the new size must reach the disk too); a WAL
    # reset after 1,000 frames is overwritten in place sooner: 1.5x the single appends of
    # a fresh 2,000-event file, 1.05-1.1x over 10,000 events, measured paired.
    return 1000 if durability == "full" else 4000


def _wal(conn: Connection, waiter: Callable[[int], bool]) -> None:
    """WAL mode; its checkpoints are ``log.checkpoint.WalBound``'s, set once the busy handler is.

    Switching reads the header, then writes it. Finding another process's write lock between
    the two (several processes opening one new file), SQLite returns busy at once rather than
    call the busy handler, since waiting with a read lock held could deadlock; the read lock
    is gone when the statement fails, so the switch is tried again on ``waiter``'s schedule.
    """
    tries = 0
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            break
        except apsw.BusyError:
            if not waiter(tries):
                raise
            tries += 1
    conn.execute(f"PRAGMA journal_size_limit = {LIMIT_BYTES}")


def _synchronous(conn: Connection, durability: Durability) -> None:
    conn.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")


def _secure_delete(conn: Connection, durability: Durability) -> None:
    """Deleted content is overwritten with zeros, and freed pages too, on every connection:
    a value removed by retention must not survive in a page that is later reused (gc then
    gives the free pages back and empties the WAL, docs/retention.md)."""
    conn.execute("PRAGMA secure_delete = ON")


def _cache(conn: Connection, durability: Durability) -> None:
    conn.execute("PRAGMA cache_size = -16000")  # 16 MB page cache
    conn.execute("PRAGMA temp_store = MEMORY")


_SETUP: Final[tuple[Callable[[Connection, Durability], None], ...]] = (
    _no_double_quoted_strings,
    _foreign_keys,
    _synchronous,
    _secure_delete,
    _cache,
)


def _damaged(error: apsw.Error) -> bool:
    """Did SQLite find the file damaged (a malformed page, a header it cannot use)?"""
    return isinstance(error, apsw.CorruptError | apsw.NotADBError)


def _refuse_foreign_file(path: str) -> None:
    """Refuse a file that is not SQLite by its header, without opening it for writing."""
    if path == ":memory:" or not os.path.exists(path):
        return
    if os.path.isdir(path):
        raise StoreError(f"{path} is a directory, not a forkline_es database file")
    with open(path, "rb") as f:
        head = f.read(len(_SQLITE_MAGIC))
    if head and head != _SQLITE_MAGIC:
        raise StoreError(
            f"{path} is not a SQLite database (its header is not 'SQLite format 3'); "
            "pass the path of a forkline_es database, or a new path to create one"
        )


#: One statement, so one snapshot: read one by one, another process creating the file could
#: commit in between, and its tables would be seen without its application_id.
_INSPECT: Final = (
    "SELECT (SELECT application_id FROM pragma_application_id), "
    "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema)"
)


def _inspect(conn: Connection, path: str) -> tuple[int, int, int]:
    """(application_id, user_version, number of schema objects) of one snapshot, read-only."""
    try:
        ((app_id, version, objects),) = conn.execute(_INSPECT).fetchall()
    except apsw.NotADBError as e:  # its header said SQLite (_refuse_foreign_file): damaged
        raise StoreDamaged(f"{path} is not a SQLite database: {e}") from None
    except apsw.Error as e:
        kind = StoreDamaged if _damaged(e) else StoreError
        raise kind(f"{path} cannot be read as a SQLite database: {e}") from None
    return int(app_id), int(version), int(objects)


def _inspect_read_only(path: str) -> tuple[int, int, int]:
    """``_inspect`` through a read-only connection, which never checkpoints a WAL."""
    try:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as e:
        raise StoreError(f"cannot open {path}: {e}") from None
    try:
        conn.set_busy_handler(_busy_waiter(BUSY_TIMEOUT_MS))  # another process may be recovering it
        return _inspect(conn, path)
    finally:
        conn.close()


def _judge(path: str, app_id: int, version: int, objects: int) -> None:
    """Refuse another application's database or a newer schema, saying which."""
    if app_id != APPLICATION_ID and (objects > 0 or app_id != 0):
        whose = f"application_id {app_id:#x}" if app_id else "tables of its own, no application_id"
        raise StoreError(
            f"{path} is a SQLite database of another application ({whose}); "
            "forkline_es will not write to it: pass a forkline_es database, or a new path"
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has forkline_es schema version {version}, newer than this "
            f"forkline_es supports ({SCHEMA_VERSION}); upgrade forkline_es to open it"
        )


def _user_version(conn: Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchall()[0][0])


def _migration_step(conn: Connection, path: str, version: int) -> None:
    """Schema ``version`` to ``version + 1``, inside the caller's write transaction."""
    if version == 0:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    try:
        conn.execute(MIGRATIONS[version])
    except apsw.ConstraintError as e:  # a trigger refused a row the step copies
        raise StoreError(
            f"{path}: migrating to schema version {version + 1} stopped: {e}; nothing was changed"
        ) from None
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise StoreError(
            f"{path}: migrating to schema version {version + 1} would break "
            f"{len(broken)} foreign key reference(s), e.g. {broken[0]}; nothing was changed"
        )
    conn.execute(f"PRAGMA user_version = {version + 1}")


def _migrate(conn: Connection, path: str, current: int) -> None:
    """Step user_version from ``current`` to SCHEMA_VERSION, one transaction per step.

    Foreign keys are off and renames keep other objects' references by name while a step
    runs (both settings take effect only outside a transaction), as SQLite's procedure for
    rebuilding a table asks; ``foreign_key_check`` must still come back empty before the
    step commits.
    """
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA legacy_alter_table = ON")
    try:
        for version in range(current, SCHEMA_VERSION):
            # The write lock first, then the version again: another process opening the
            # same new file at the same moment may have taken this step already.
            conn.execute("BEGIN IMMEDIATE")
            try:
                if _user_version(conn) > version:
                    conn.execute("COMMIT")
                    continue
                _migration_step(conn, path, version)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            _log.info("schema_migrated", path=path, to_version=version + 1)
    finally:
        conn.execute("PRAGMA legacy_alter_table = OFF")
        conn.execute("PRAGMA foreign_keys = ON")


def open_connection(
    path: str | os.PathLike[str],
    durability: Durability = "normal",
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
) -> Connection:
    """Open (creating or migrating) a forkline_es database, or raise StoreError untouched.

    ``busy_timeout_ms``: how long a write waits for another writer's lock before the
    append is refused with ``conflict``; set before the first read of the file.
    """
    if durability not in ("normal", "full"):
        raise StoreError(f"durability must be 'normal' or 'full', not {shown(durability)}")
    spath = os.fspath(path)
    _refuse_foreign_file(spath)
    if spath != ":memory:" and os.path.exists(spath + "-wal"):
        # A WAL left by a crash (or kept by another process): a read-write connection
        # would checkpoint it into the file when it closes. Judge the file read-only first.
        _judge(spath, *_inspect_read_only(spath))
    if spath != ":memory:":
        Path(spath).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = apsw.Connection(spath)
    except apsw.Error as e:
        raise StoreError(f"cannot open {spath}: {e}") from None
    try:
        waiter = _busy_waiter(busy_timeout_ms)
        conn.set_busy_handler(waiter)
        app_id, version, objects = _inspect(conn, spath)
        _judge(spath, app_id, version, objects)
        if objects == 0:
            # Before the WAL step writes the header: an empty file is the only one that
            # takes auto_vacuum without a VACUUM; it lets retention's gc shrink the file.
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        _wal(conn, waiter)
        for step in _SETUP:
            step(conn, durability)
        install(conn, checkpoint_frames(durability), waiter)
        if version < SCHEMA_VERSION:
            _migrate(conn, spath, version)
    except apsw.Error as e:  # a damaged file (CorruptError, NotADBError), a full disk, ...
        conn.close()
        raise (StoreDamaged if _damaged(e) else StoreError)(f"cannot open {spath}: {e}") from None
    except BaseException:
        conn.close()
        raise
    return conn


# -- read-only ---------------------------------------------------------------------------


def _read_only_mount(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _frozen(path: str) -> bool:
    """Can nobody write ``path``? The file has no write permission for anyone (a kept copy:
    ``chmod a-w``; only a process that ignores permissions, such as root's, could still
    write it), or it is on a read-only mount with no ``-shm`` beside it: a WAL writer always
    has one, and may be writing through another mount of the same files."""
    if os.stat(path).st_mode & 0o222 == 0:
        return True
    return _read_only_mount(path) and not os.path.exists(path + "-shm")


def _connect_read_only(path: str) -> Connection:
    """A connection that cannot write the database, chosen so that it writes nothing beside it.

    - A file others may write: SQLite's read-only mode, which reads one consistent snapshot
      however many processes write meanwhile. It needs ``-wal`` and ``-shm`` beside the file
      and creates them when they are missing and the folder lets it (they hold no data; the
      next writer uses them); on a read-only mount it reads an existing ``-shm`` read-only.
    - A frozen file (``_frozen``) with no WAL content: ``immutable=1``, no locks, no files.
    - A frozen file whose ``-wal`` holds commits: the WAL index in memory (``log.frozen``).
    """
    if not _frozen(path):
        return apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    wal = path + "-wal"
    if not os.path.exists(wal) or os.path.getsize(wal) == 0:
        import urllib.request  # about 5 ms (ssl, http): only for this rare case

        uri = "file:" + urllib.request.pathname2url(os.path.abspath(path)) + "?immutable=1"
        return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY, vfs=frozen.register())
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")  # before the first read: no -shm
    return conn


def _cannot_read(path: str, error: apsw.Error) -> StoreError:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(path, os.R_OK):
        return StoreError(f"cannot read {path}: you have no read permission on it")
    if isinstance(error, apsw.CantOpenError) and not os.access(folder, os.W_OK):
        return StoreError(
            f"cannot read {path} read-only: another process may write it, and SQLite reads such "
            f"a file only with {path}-wal and -shm beside it, which {folder} does not let it "
            "create; read it as a user who may write that folder, or read a frozen copy "
            "(a copy without write permission: `chmod a-w COPY`)"
        )
    return StoreError(f"cannot read {path}: {error}")


def open_read_only(path: str | os.PathLike[str], busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> Connection:
    """Open an existing forkline_es database that this connection never writes.

    Nothing is created, migrated or checkpointed (``_connect_read_only`` says which files
    SQLite itself may need). A file of an older schema is refused: reading it needs its
    migration, which writes.
    """
    spath = os.fspath(path)
    if spath in ("", ":memory:") or spath.startswith("file::memory:"):
        raise StoreError(f"a read-only store reads an existing database file, and {spath!r} is not one")
    if not os.path.exists(spath) or (os.path.isfile(spath) and os.path.getsize(spath) == 0):
        what = "an empty file" if os.path.exists(spath) else "no database"
        raise StoreError(f"{what} at {spath}; a read-only open never creates one")
    _refuse_foreign_file(spath)
    try:
        conn = _connect_read_only(spath)
    except apsw.Error as e:
        raise _cannot_read(spath, e) from None
    try:
        conn.set_busy_handler(_busy_waiter(busy_timeout_ms))  # a writer may be recovering it
        try:  # SQLite opens the file at the first read: see whether it can
            conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
        except apsw.CantOpenError as e:
            raise _cannot_read(spath, e) from None
        except apsw.Error:
            pass  # _inspect says what the file is
        app_id, version, objects = _inspect(conn, spath)
        _judge(spath, app_id, version, objects)
        if objects == 0:
            raise StoreError(f"{spath} is an empty SQLite database, not a forkline_es store")
        if version < SCHEMA_VERSION:
            raise StoreError(
                f"{spath} has forkline_es schema version {version}, older than this forkline_es "
                f"reads ({SCHEMA_VERSION}), and a read-only open does not migrate it: open it "
                f"read-write once (fe.Store.open(path).close()); to keep this file as it is, "
                "migrate a copy"
            )
        _no_double_quoted_strings(conn, "normal")
        _foreign_keys(conn, "normal")
        _cache(conn, "normal")  # the page cache, and temporary tables in memory
    except apsw.Error as e:  # a damaged file (CorruptError), an I/O error, ...
        conn.close()
        raise (StoreDamaged if _damaged(e) else StoreError)(f"cannot read {spath}: {e}") from None
    except BaseException:
        conn.close()
        raise
    return conn
