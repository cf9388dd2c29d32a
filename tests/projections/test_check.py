"""``rebuild --check`` while other processes write: both sides come from one snapshot.

Issue 20, item 9: the check compared a snapshot copy with live tables read later, so with
a writer running it exited 1 every time. Here a writer process appends without pause
while the check runs several times; a real difference (a tampered projection row) is
still found.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

import forkline_es as fe

WORKER = Path(__file__).with_name("_worker.py")
CLI = "import sys; from forkline_es.cli import main; sys.exit(main())"


def _seed(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        for n in range(20):
            run = store.start_run("seed", inputs={"n": n}, run_id=f"seed-{n}")
            for i in range(20):
                run.begin_step(f"s{i}", arguments={"i": i})
                run.end_step(f"s{i}", "succeeded", result={"i": i, "text": "y" * 100})
            run.conclude("succeeded")


@pytest.fixture
def writer(db_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    _seed(db_path)
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "writer", str(db_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"writing\n", proc.stderr
        yield proc
        assert proc.poll() is None, "the writer stopped while the checks ran"
    finally:
        proc.kill()
        proc.communicate()


def _check(db_path: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, "rebuild", "--check", "--db", str(db_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp)},
        check=False,
    )


def _events(db_path: Path) -> int:
    with fe.Store.open(db_path) as store:
        return int(store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0])


def test_a_check_beside_a_writing_process_finds_no_difference(
    db_path: Path, tmp_path: Path, writer: subprocess.Popen[bytes]
) -> None:
    tmp = tmp_path / "system-tmp"
    tmp.mkdir()
    counts = [_events(db_path)]
    for _ in range(5):
        done = _check(db_path, tmp)
        assert done.returncode == 0, (done.stdout + done.stderr)[:3000]
        assert "the projections equal a rebuild from the log" in done.stdout
        counts.append(_events(db_path))
    assert counts == sorted(set(counts))  # the writer appended during every check
    assert not list(tmp.iterdir())  # nothing in the system's temporary folder
    assert not list(tmp_path.glob("runs.db.check-*"))  # each check removed its copy


def test_a_tampered_projection_row_is_still_found_while_a_process_writes(
    db_path: Path, tmp_path: Path, writer: subprocess.Popen[bytes]
) -> None:
    conn = apsw.Connection(str(db_path))
    conn.set_busy_timeout(30_000)
    conn.execute("UPDATE run_summary SET status = 'failed' WHERE run_id = 'seed-7'")
    conn.close()
    done = _check(db_path, tmp_path)
    assert done.returncode == 1, (done.stdout + done.stderr)[:3000]
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("run_summary ('seed-7',): live"), done.stdout[:3000]
