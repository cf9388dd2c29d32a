"""The read commands open their database read-only; ``verify`` counts a damaged file as a
problem found (exit 1), not a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main

from .helpers import picture, record
from .test_read_only import _frozen, _writable

READ_COMMANDS = (
    ("runs",),
    ("runs", "--json"),
    ("show", "done"),
    ("show", "done", "--timeline"),
    ("step", "done", "fetch/0"),
    ("log", "done"),
    ("diff", "done", "done"),
    ("export", "done"),
    ("export", "done", "--baseline"),
    ("verify", "done"),
    ("verify", "--all"),
)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    folder.mkdir()
    db = folder / "runs.db"
    with fe.Store.open(db) as store:
        record(store)
    return db


@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_read_commands_leave_a_chmod_444_copy_as_it_was(copy: Path, args: tuple[str, ...]) -> None:
    """No -wal or -shm beside it afterwards, no byte or time changed (root included)."""
    _frozen(copy.parent)
    before = picture(copy.parent)
    try:
        result = CliRunner().invoke(main, [*args, "--db", str(copy)])
        assert result.exit_code == 0, result.output
        assert picture(copy.parent) == before
    finally:
        _writable(copy.parent)


def test_read_commands_do_not_migrate(copy: Path) -> None:
    """An older schema is refused (exit 2) with what to do, not migrated by a read."""
    import apsw

    conn = apsw.Connection(str(copy))
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    result = CliRunner().invoke(main, ["runs", "--db", str(copy)])
    assert result.exit_code == 2 and "read-write once" in result.output
    conn = apsw.Connection(str(copy))
    assert conn.execute("PRAGMA user_version").fetchall()[0][0] == 1


@pytest.mark.parametrize(
    "args", [("verify", "--all"), ("verify", "--all", "--json"), ("verify", "--all", "--no-projections")]
)
def test_verify_on_a_damaged_file_finds_a_problem_exit_1(damaged_db: Path, args: tuple[str, ...]) -> None:
    db = damaged_db
    result = CliRunner().invoke(main, [*args, "--db", str(db)])
    assert result.exit_code == 1 and "damaged" in result.output, result.output


def test_verify_on_a_damaged_first_page_finds_a_problem_exit_1(damaged_db: Path) -> None:
    """Damage SQLite meets at open (the schema page) is a problem found too."""
    db = damaged_db
    with open(db, "r+b") as f:
        f.seek(100)  # past the header, into page 1's b-tree
        f.write(b"\xff" * 400)
    result = CliRunner().invoke(main, ["verify", "--all", "--db", str(db)])
    assert result.exit_code == 1, result.output
    shown = CliRunner().invoke(main, ["runs", "--db", str(db)])
    assert shown.exit_code == 2  # for the other read commands it stays a refusal


def test_verify_of_a_file_that_is_not_a_database_stays_a_refusal(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    db.write_text("not a database at all\n")
    result = CliRunner().invoke(main, ["verify", "--all", "--db", str(db)])
    assert result.exit_code == 2 and "not a SQLite database" in result.output


def test_rebuild_check_only_reads_the_database_and_its_wal(tmp_path: Path) -> None:
    """A writer killed with its commits still in the WAL: ``rebuild --check`` reads them and
    changes no byte of the database or the WAL (its scratch copy is a file of its own). It
    opened the store read-write before, and closing that checkpointed the WAL into the file."""
    import subprocess
    import sys

    db = tmp_path / "runs.db"
    writer = (
        "import os, sys, forkline_es as fe\n"
        "s = fe.Store.open(sys.argv[1])\n"
        "for i in range(5):\n"
        "    r = s.start_run('wf', run_id=f'r{i}'); r.begin_step('a'); r.end_step('a', 'succeeded')\n"
        "    r.conclude('succeeded')\n"
        "os._exit(0)  # no close: the commits stay in the WAL\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(db)], check=True)
    wal = db.with_name("runs.db-wal")
    before = (db.read_bytes(), wal.read_bytes())
    assert before[1], "the writer's commits are in the WAL"
    result = CliRunner().invoke(main, ["rebuild", "--check", "--db", str(db)])
    assert result.exit_code == 0 and "equal a rebuild" in result.output, result.output
    assert (db.read_bytes(), wal.read_bytes()) == before
