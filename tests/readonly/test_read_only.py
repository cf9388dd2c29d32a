"""``fe.Store.open(path, read_only=True)``: reads everything, writes nothing (issue 20, item 10).

"Writes nothing" is checked by picturing the folder (every file's mode, mtime and bytes, and
the listing) before and after, which means something as root too, where permissions stop no
write. A place the operating system itself refuses to write is made as well: a read-only
bind mount in a private mount namespace as root, permissions otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.schema import SCHEMA_VERSION

from .helpers import picture, reads, record, refused_writes

HERE = Path(__file__).parent
WORKER = HERE / "_worker.py"
RECORDING_WORKER = HERE.parent / "recording" / "_worker.py"


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Path, dict[str, object]]]:
    """A recorded store in its own folder, and what a read-write store reads from it."""
    folder = tmp_path / "copy"
    folder.mkdir()
    db = folder / "runs.db"
    with fe.Store.open(db) as store:
        record(store)
    with fe.Store.open(db) as store:
        expected = json.loads(json.dumps(reads(store)))
    assert sorted(os.listdir(folder)) == ["runs.db", "runs.db.artifacts"]  # closed: no WAL left
    yield db, expected
    _writable(folder)


def _frozen(folder: Path) -> None:
    """chmod a-w on every file and folder (the test's copy kept as it is)."""
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            os.chmod(Path(dirpath, name), 0o444)
    for dirpath, _, _ in os.walk(folder, topdown=False):
        os.chmod(dirpath, 0o555)


def _writable(folder: Path) -> None:
    for dirpath, _, filenames in os.walk(folder):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(Path(dirpath, name), 0o644)


def _refused_everywhere(outcomes: dict[str, str]) -> None:
    assert set(outcomes.values()) == {"refused"}, outcomes


def test_a_chmod_444_copy_in_a_555_folder_reads_whole_and_stays_untouched(
    recorded: tuple[Path, dict[str, object]],
) -> None:
    db, expected = recorded
    _frozen(db.parent)
    before = picture(db.parent)
    with fe.Store.open(db, read_only=True) as store:
        assert store.read_only
        assert json.loads(json.dumps(reads(store))) == expected
        _refused_everywhere(refused_writes(store))
    assert picture(db.parent) == before


def test_a_read_only_open_of_a_writable_file_writes_no_data(recorded: tuple[Path, dict[str, object]]) -> None:
    """Others may write it: SQLite's -wal and -shm may appear (they coordinate the snapshot),
    nothing else changes and the database file keeps its bytes."""
    db, expected = recorded
    before = picture(db.parent)
    with fe.Store.open(db, read_only=True) as store:
        assert json.loads(json.dumps(reads(store))) == expected
        _refused_everywhere(refused_writes(store))
    after = picture(db.parent)
    assert {k: v for k, v in after.items() if not k.endswith(("-wal", "-shm")) and k != "."} == {
        k: v for k, v in before.items() if k != "."
    }
    assert all(len(v[2]) == 0 for k, v in after.items() if k.endswith("-wal"))


def _mount_namespace_works() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount --bind -o ro / /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0


def _in_a_read_only_place(folder: Path, *argv: str) -> str:
    """Run ``python argv`` where the OS refuses every write to ``folder``: a read-only bind
    mount for root (whom permissions do not stop) when it can make one, permissions otherwise
    (then, as root, the folder's picture before and after is what shows nothing was written).
    Returns its output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    command = [sys.executable, *argv]
    if os.geteuid() == 0 and _mount_namespace_works():
        script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(folder)]
        command += [sys.executable, *argv]
    else:
        _frozen(folder)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_store_on_a_place_the_os_refuses_to_write_reads_and_every_command_works(
    recorded: tuple[Path, dict[str, object]],
) -> None:
    db, expected = recorded
    before = picture(db.parent)
    seen = json.loads(_in_a_read_only_place(db.parent, str(WORKER), str(db)))
    assert seen["reads"] == expected
    _refused_everywhere(seen["writes"])  # type: ignore[arg-type]
    cli: dict[str, list[object]] = seen["cli"]  # type: ignore[assignment]
    assert {name: code for name, (code, _) in cli.items()} == {
        "runs": 0,
        "show": 0,
        "step": 0,
        "log": 0,
        "diff": 0,
        "export": 0,
        "verify": 0,
    }, cli
    assert [r["id"] for r in json.loads(str(cli["runs"][1]))] == [r["id"] for r in expected["runs"]]  # type: ignore[attr-defined]
    assert json.loads(str(cli["export"][1])) == json.loads(str(expected["export"]))
    after = picture(db.parent)
    _writable(db.parent)
    assert {k: v[1:] for k, v in after.items()} == {k: v[1:] for k, v in before.items()}  # modes: _frozen's


def test_a_frozen_copy_whose_wal_holds_the_commits_reads_them_all(tmp_path: Path) -> None:
    """A writer killed with -9 leaves its commits in -wal; a copy kept as it is (no -shm, or
    a stale one) reads every acknowledged event, without a file beside it changing."""
    folder = tmp_path / "copy"
    folder.mkdir()
    db = folder / "runs.db"
    worker = subprocess.Popen(
        [sys.executable, str(RECORDING_WORKER), "crash", str(db), "r"], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    acknowledged = [worker.stdout.readline().split() for _ in range(60)]
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    assert os.path.getsize(str(db) + "-wal") > 0
    last_seq = 1 + sum(1 for kind, _ in acknowledged if kind != "start")  # one event per ack
    for keep_shm in (True, False):
        if not keep_shm:
            os.chmod(folder, 0o755)
            os.remove(str(db) + "-shm")
        _frozen(folder)
        before = picture(folder)
        with fe.Store.open(db, read_only=True) as store:
            rows = list(store.log.read_run("r"))
            assert len(rows) >= last_seq
            assert [r.ok for r in store.verify_all()] == [True]
            assert store.get_run_record("r")["run"]["status"] == "active"
        assert picture(folder) == before
    _writable(folder)


_READ_KILLED: Final = """
import sys
import forkline_es as fe
with fe.Store.open(sys.argv[1], read_only=True) as store:
    print(len(list(store.log.read_run("r"))), [r.ok for r in store.verify_all()])
"""


def test_a_killed_writers_files_on_a_read_only_mount_read_whole(tmp_path: Path) -> None:
    """-wal and -shm left by kill -9, on a mount nobody may write through (another mount of
    the same files could): SQLite's read-only mode reads the -shm without writing it."""
    folder = tmp_path / "copy"
    folder.mkdir()
    db = folder / "runs.db"
    worker = subprocess.Popen(
        [sys.executable, str(RECORDING_WORKER), "crash", str(db), "r"], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    acknowledged = [worker.stdout.readline() for _ in range(40)]
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    assert sorted(os.listdir(folder)) == ["runs.db", "runs.db-shm", "runs.db-wal"]
    before = picture(folder)
    rows, verified = _in_a_read_only_place(folder, "-c", _READ_KILLED, str(db)).split(" ", 1)
    assert int(rows) >= len(acknowledged) and verified.strip() == "[True]"
    after = picture(folder)
    _writable(folder)
    assert {k: v[1:] for k, v in after.items()} == {k: v[1:] for k, v in before.items()}


def test_a_read_only_open_sees_consistent_snapshots_while_another_process_writes(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    worker = subprocess.Popen(
        [sys.executable, str(RECORDING_WORKER), "crash", str(db), "r"], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    try:
        for _ in range(5):
            worker.stdout.readline()  # the run exists
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while len(seen) < 6 and time.monotonic() < deadline:
            acked = int(worker.stdout.readline().split()[1])  # an entry seq acknowledged by now
            with fe.Store.open(db, read_only=True) as store:
                with store.log.snapshot():
                    doc = store.get_run_record("r")
                    rows = list(store.log.read_run("r"))
                report = store.verify_run("r")
                assert report.ok, report.problems  # chain, values and projections agree
                # one snapshot: the document renders exactly the entries of the rows it read
                assert len(doc["entries"]) == sum(1 for r in rows if r.entry is not None)
                assert doc["entries"][-1]["seq"] >= acked
                seen.append(len(rows))
        assert len(seen) == 6 and seen == sorted(seen) and seen[-1] > seen[0]
        assert worker.poll() is None  # the reader never stopped the writer
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()


def test_projections_behind_the_log_are_folded_privately_not_written(
    recorded: tuple[Path, dict[str, object]],
) -> None:
    """A copy whose projections another forkline_es version made (or that lag the log) reads
    the records a rebuild would give, and the file keeps its stale tables."""
    db, expected = recorded
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE projector SET version = version + 100 WHERE name = 'records'")
    conn.execute("DELETE FROM run_summary WHERE run_id = 'done'")
    conn.execute("UPDATE step_view SET status = 'bogus'")
    conn.close()
    _frozen(db.parent)
    before = picture(db.parent)
    with fe.Store.open(db, read_only=True) as store:
        assert json.loads(json.dumps(reads(store))) == expected
    assert picture(db.parent) == before


def test_an_older_schema_is_refused_read_only_with_what_to_do(
    recorded: tuple[Path, dict[str, object]],
) -> None:
    db, _ = recorded
    conn = apsw.Connection(str(db))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    _frozen(db.parent)
    before = picture(db.parent)
    with pytest.raises(fe.StoreError, match="read-write once"):
        fe.Store.open(db, read_only=True)
    assert picture(db.parent) == before


@pytest.mark.parametrize("what", ["missing", "empty", "memory"])
def test_nothing_to_read_is_refused_and_nothing_is_created(tmp_path: Path, what: str) -> None:
    db = tmp_path / "runs.db"
    if what == "empty":
        db.touch()
    path = ":memory:" if what == "memory" else db
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(fe.StoreError):
        fe.Store.open(path, read_only=True)
    assert sorted(os.listdir(tmp_path)) == before


def test_read_only_is_a_bool(tmp_path: Path) -> None:
    with pytest.raises(fe.InvalidRequest, match="read_only"):
        fe.Store.open(tmp_path / "runs.db", read_only="yes")  # type: ignore[arg-type]
    assert not os.listdir(tmp_path)
