"""Opening a file: our schema is created once; anything else is refused and left untouched."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.connection import Durability, checkpoint_frames, open_connection
from forkline_es.log.schema import APPLICATION_ID, SCHEMA_VERSION
from forkline_es.log.sqlite import SQLITE


def _pragma(path: Path, name: str) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute(f"PRAGMA {name}").fetchall()[0][0])
    finally:
        conn.close()


def _schema(path: Path) -> list[tuple[str, str, str]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(r) for r in conn.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY name")]
    finally:
        conn.close()


def test_a_new_file_gets_our_application_id_and_schema_version(db_path: Path) -> None:
    with fe.Store.open(db_path):
        pass
    assert _pragma(db_path, "application_id") == APPLICATION_ID
    assert _pragma(db_path, "user_version") == SCHEMA_VERSION
    assert {"log", "payload", "eviction", "projector"} <= {name for _, name, _ in _schema(db_path)}


def test_opening_twice_is_idempotent(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run_id = store.start_run("wf", inputs={"a": 1}).id
    schema = _schema(db_path)
    with fe.Store.open(db_path) as again, fe.Store.open(db_path) as third:
        assert again.get_run_record(run_id) == third.get_run_record(run_id)
    assert _schema(db_path) == schema
    assert _pragma(db_path, "user_version") == SCHEMA_VERSION


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _siblings(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


def _random_bytes(p: Path) -> None:
    p.write_bytes(os.urandom(8192))


def _text(p: Path) -> None:
    p.write_text("run_id,status\nabc,succeeded\n", encoding="utf-8")


def _zero_header(p: Path) -> None:
    p.write_bytes(bytes(4096))  # looks empty, but the header is not SQLite's


def _sqlite_header_then_garbage(p: Path) -> None:
    p.write_bytes(b"SQLite format 3\x00" + os.urandom(4080))


def _foreign_app(p: Path) -> None:
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.commit()
    conn.close()


def _foreign_app_wal(p: Path) -> None:
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()


def _foreign_app_id_only(p: Path) -> None:
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA application_id = 1234")  # another application's empty database
    conn.commit()
    conn.close()


def _newer_schema(p: Path) -> None:
    with fe.Store.open(p) as store:
        store.start_run("wf", inputs={"a": 1})
    conn = sqlite3.connect(p)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()


CASES: list[tuple[Callable[[Path], None], str]] = [
    (_random_bytes, "not a SQLite database"),
    (_text, "not a SQLite database"),
    (_zero_header, "not a SQLite database"),
    (_sqlite_header_then_garbage, "SQLite database"),
    (_foreign_app, "another application"),
    (_foreign_app_wal, "another application"),
    (_foreign_app_id_only, "another application"),
    (_newer_schema, "newer"),
]


_OPEN_AT_ONCE = """
import os, sys, time
import forkline_es as fe
db, barrier = sys.argv[1], sys.argv[2]
while not os.path.exists(barrier):
    time.sleep(0.0005)
with fe.Store.open(db) as store:
    store.start_run("wf")
"""


def test_processes_creating_one_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    """Each process reads the schema version, then takes the write lock and reads it again:
    the steps another process took meanwhile are not taken twice ('table log already exists')."""
    for trial in range(3):
        db, barrier = tmp_path / f"runs-{trial}.db", tmp_path / f"go-{trial}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN_AT_ONCE, str(db), str(barrier)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(5)
        ]
        barrier.touch()
        outputs = [p.communicate(timeout=60)[0] for p in procs]
        assert [p.returncode for p in procs] == [0] * 5, outputs
        with fe.Store.open(db) as store:
            assert len(store.list_runs()) == 5
            assert store.conn.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION


@pytest.mark.parametrize(("make", "says"), CASES, ids=[make.__name__.strip("_") for make, _ in CASES])
@pytest.mark.parametrize("durability", ["normal", "full"])
def test_a_file_that_is_not_ours_is_refused_and_left_byte_for_byte(
    tmp_path: Path, make: Callable[[Path], None], says: str, durability: Durability
) -> None:
    path = tmp_path / "some.db"
    make(path)
    before, files = _digest(path), _siblings(path)
    with pytest.raises(fe.StoreError) as info:
        fe.Store.open(path, durability=durability)
    assert says in str(info.value)
    assert str(path) in str(info.value)
    assert _digest(path) == before
    assert _siblings(path) == files  # no -wal or -shm left behind


def test_the_refusal_comes_from_the_connection_layer_too(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    _text(path)
    with pytest.raises(fe.StoreError, match="not a SQLite database"):
        open_connection(path)


def test_an_empty_file_becomes_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with fe.Store.open(path) as store:
        store.start_run("wf")
    assert _pragma(path, "application_id") == APPLICATION_ID


def _crash_after(path: Path, statements: str) -> None:
    """Run ``statements`` in another process that dies without closing: its WAL stays."""
    code = f"import apsw, os\nc = apsw.Connection({str(path)!r})\nc.execute({statements!r})\nos._exit(0)"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("statements", "says"),
    [
        (f"PRAGMA user_version = {SCHEMA_VERSION + 1}", "newer"),
        ("PRAGMA application_id = 77", "another application"),
    ],
    ids=["newer-schema", "foreign-app"],
)
def test_a_refused_file_with_a_crashed_writers_wal_keeps_file_and_wal(
    db_path: Path, statements: str, says: str
) -> None:
    with fe.Store.open(db_path) as store:
        store.start_run("wf")
    _crash_after(db_path, statements)
    wal = db_path.with_name(db_path.name + "-wal")
    assert wal.stat().st_size > 0  # the refusal is in the WAL only
    before, wal_before, files = _digest(db_path), _digest(wal), _siblings(db_path)
    with pytest.raises(fe.StoreError, match=says):
        fe.Store.open(db_path)
    assert (_digest(db_path), _digest(wal)) == (before, wal_before)  # not checkpointed
    assert _siblings(db_path) == files


def test_a_store_with_a_crashed_writers_wal_opens_with_its_events(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run_id = store.start_run("wf", inputs={"a": 1}).id
    _crash_after(db_path, "PRAGMA user_version")  # a reader that died: WAL and shm stay
    with fe.Store.open(db_path) as store:
        assert store.get_run_record(run_id)["run"]["id"] == run_id


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_every_connection_is_set_up_for_the_append_path(db_path: Path, durability: Durability) -> None:
    """WAL, the durability's synchronous level, foreign keys, secure delete, the WAL size
    limit, and the store's checkpoint policy in place of SQLite's auto-checkpoint."""
    with fe.Store.open(db_path, durability=durability) as store:
        pragma = {
            name: store.conn.execute(f"PRAGMA {name}").fetchall()[0][0]
            for name in (
                "journal_mode",
                "synchronous",
                "foreign_keys",
                "secure_delete",
                "journal_size_limit",
                "wal_autocheckpoint",
            )
        }
        run = store.start_run("wf")
        largest = 0
        for i in range(1500 if durability == "normal" else 400):  # past the checkpoint interval
            run.begin_step(f"s/{i}", arguments={"i": i})
            largest = max(largest, os.path.getsize(f"{db_path}-wal"))
    assert pragma == {
        "journal_mode": "wal",
        "synchronous": 2 if durability == "full" else 1,
        "foreign_keys": 1,
        "secure_delete": 1,
        "journal_size_limit": 24 * 1024 * 1024,
        "wal_autocheckpoint": 0,  # log.checkpoint.WalBound checkpoints instead
    }
    frames = checkpoint_frames(durability)
    assert frames * 4096 < largest <= (frames + 50) * (4096 + 24) + 32  # restarted at its interval


_HOLD_WRITE_LOCK = """
import sys, time, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def test_switching_to_wal_waits_for_another_process_holding_the_write_lock(tmp_path: Path) -> None:
    """Switching a file to WAL reads its header, then writes it. Finding another process's
    write lock between the two, SQLite returns busy without calling the busy handler (waiting
    could deadlock), so opening must wait and try again itself: 1 in 40 rounds of five
    processes opening one new file failed with 'database is locked' before it did."""
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        run_id = store.start_run("wf").id
    conn = apsw.Connection(str(db))
    assert conn.execute("PRAGMA journal_mode = DELETE").fetchall() == [("delete",)]
    conn.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE_LOCK, str(db), "0.3"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with fe.Store.open(db) as store:
            assert [r["id"] for r in store.list_runs()] == [run_id]
            assert store.conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    finally:
        assert holder.wait(timeout=30) == 0


def test_dropping_derived_tables_turns_secure_delete_back_on_even_when_a_drop_fails(db_path: Path) -> None:
    """A rebuild drops the projection tables without zeroing their pages (they hold no payload
    value); every other delete of the connection must still zero what it deletes."""
    conn = open_connection(db_path)
    cur = conn.cursor()
    cur.execute("CREATE TABLE derived (k INTEGER PRIMARY KEY)")
    cur.execute("BEGIN IMMEDIATE")
    SQLITE.drop_derived(cur, ["derived"])
    assert cur.execute("PRAGMA secure_delete").fetchall() == [(1,)]
    with pytest.raises(apsw.SQLError):
        SQLITE.drop_derived(cur, ["derived", "not a name"])
    assert cur.execute("PRAGMA secure_delete").fetchall() == [(1,)]
    cur.execute("ROLLBACK")
    conn.close()
