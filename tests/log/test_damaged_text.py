"""A byte changed inside a stored row's text, where SQLite sees no damage: the text is no
longer UTF-8, or the body no longer JSON. ``verify`` reports the row; every other read says
the store is damaged (``StoreDamaged``, the CLI without a traceback), never the decoder's
own exception."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli.main import main

pytestmark = pytest.mark.sqlite_only("a byte of a SQLite file changed behind the database's back")


def _flip(db: Path, table: str, needle: bytes, at: int, mask: int) -> None:
    """XOR ``mask`` into the byte ``at`` past the one occurrence of ``needle`` in ``table``'s pages."""
    conn = apsw.Connection(str(db))
    try:
        pages = {p for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))}
        page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    finally:
        conn.close()
    data = bytearray(db.read_bytes())
    found, start = [], data.find(needle)
    while start >= 0:
        if start // page_size + 1 in pages:
            found.append(start)
        start = data.find(needle, start + 1)
    assert len(found) == 1, f"{needle!r} is {len(found)} times in {table}'s pages"
    data[found[0] + at] ^= mask
    db.write_bytes(bytes(data))


def _store(db: Path) -> None:
    with fe.Store.open(db) as store:
        for name in ("before", "victim", "after"):
            run = store.start_run("wf", run_id=name)
            run.begin_step("s/one", arguments={"x": name}, key=f"key-{name}-one")
            run.end_step("s/one", "succeeded")
            run.begin_step("s/two", key=f"key-{name}-two")
            run.end_step("s/two", "succeeded")
            run.conclude("succeeded")
        store.gc()  # every page in the file, no WAL beside it


@pytest.fixture
def not_utf8(tmp_path: Path) -> Path:
    """Run "victim"'s fourth row (``begin_step`` of ``s/two``): a byte of its key made 0xAD,
    which UTF-8 never has alone."""
    db = tmp_path / "runs.db"
    _store(db)
    _flip(db, "log", b"key-victim-two", 4, 0x80)  # "-" (0x2D) becomes 0xAD: a lone continuation byte
    return db


@pytest.fixture
def not_json(tmp_path: Path) -> Path:
    """Run "victim"'s first ``begin_step`` body with a quote made "#": UTF-8, not JSON."""
    db = tmp_path / "runs.db"
    _store(db)
    with fe.Store.open(db) as store:
        body = store.conn.execute("SELECT body FROM log WHERE run_id = 'victim' AND seq = 2").fetchall()[0][0]
    _flip(db, "log", body.encode(), 0, 0x01)  # the body's opening "{" (0x7B) becomes "z" (0x7A)
    return db


@pytest.mark.parametrize("damage", ["not_utf8", "not_json"])
def test_verify_reports_the_changed_row_and_the_other_runs_are_clean(
    damage: str, request: pytest.FixtureRequest
) -> None:
    db: Path = request.getfixturevalue(damage)
    seq = 4 if damage == "not_utf8" else 2
    with fe.Store.open(db, read_only=True) as store:
        reports = {r.run_id: r for r in store.verify_all()}
        assert reports["before"].ok and reports["after"].ok
        problems = [(p.kind, p.seq) for p in reports["victim"].problems]
        assert ("row-digest", seq) in problems
        assert store.verify_run("victim").problems == reports["victim"].problems
    out = CliRunner().invoke(main, ["verify", "--all", "--db", str(db)])
    assert out.exit_code == 1 and "row-digest" in out.output and "Traceback" not in out.output


@pytest.mark.parametrize("damage", ["not_utf8", "not_json"])
def test_reads_of_the_changed_row_say_the_store_is_damaged(
    damage: str, request: pytest.FixtureRequest
) -> None:
    db: Path = request.getfixturevalue(damage)
    with fe.Store.open(db) as store:
        for read in (
            lambda: store.resume_run("victim"),
            store.rebuild_projections,
            store.check_projections,
        ):
            with pytest.raises(fe.StoreDamaged, match=r"does not decode.*verify --all"):
                read()
        assert store.get_run_record("before")["run"]["status"] == "succeeded"
    for args in (["rebuild", "--check"], ["rebuild"], ["log", "victim"]):
        out = CliRunner().invoke(main, [*args, "--db", str(db)])
        assert out.exit_code in (1, 2) and "damaged" in out.output, (args, out.output)
        assert isinstance(out.exception, SystemExit), out.exception  # a message, not the decoder's error
