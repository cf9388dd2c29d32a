"""gc collects what killed processes left behind, once older than its grace period (issue 20, item 5).

A ``rebuild --check`` killed mid-way left a full copy of the database (every payload value)
in the system's temporary folder forever; an ``add_artifact`` killed while staging left a
partial file in ``<db>.artifacts/tmp/`` that gc never collected. Here real processes are
killed with SIGKILL mid-way, and gc removes the leftovers older than its grace period and
keeps the younger ones.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import forkline_es as fe

HERE = Path(__file__).parent
CHECK_WORKER = HERE.parent / "projections" / "_worker.py"
ARTIFACT_WORKER = HERE.parent / "artifacts" / "_worker.py"
OLD = (1_000_000_000, 1_000_000_000)  # 2001: far beyond any grace period


def _kill_when(args: list[str], said: bytes, tmp: Path) -> None:
    """Run a worker until it prints ``said`` (it is then mid-way), and SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == said + b"\n", (line, proc.stderr.read() if proc.stderr else b"")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _age(paths: list[Path]) -> None:
    for p in paths:
        os.utime(p, OLD)


def test_gc_removes_a_killed_check_s_copy_once_older_than_its_grace(db_path: Path, tmp_path: Path) -> None:
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    with fe.Store.open(db_path) as store:
        run = store.start_run("wf", inputs={"secret": "payload value 4f1e"}, run_id="r1")
        run.conclude("succeeded")
    for _ in range(2):
        _kill_when([str(CHECK_WORKER), "killed-check", str(db_path)], b"checking", system_tmp)
    assert not list(system_tmp.iterdir())  # never a copy in the system's temporary folder
    copies = sorted(tmp_path.glob("runs.db.check-*"))
    tokens = sorted({p.name.split("-")[1] for p in copies})
    assert len(tokens) == 2, copies
    assert any(b"payload value 4f1e" in p.read_bytes() for p in copies)  # what leaked
    old = [p for p in copies if p.name.split("-")[1] == tokens[0]]
    young = [p for p in copies if p.name.split("-")[1] == tokens[1]]
    _age(old)
    old_bytes = sum(p.stat().st_size for p in old)
    with fe.Store.open(db_path) as store:
        report = store.gc()  # the default grace period: an hour
        assert (report.leftover_files_removed, report.leftover_bytes_removed) == (len(old), old_bytes)
        assert not any(p.exists() for p in old)
        assert all(p.exists() for p in young)  # a check may still be using it
        _age(young)
        assert store.gc().leftover_files_removed == len(young)
        assert not list(tmp_path.glob("runs.db.check-*"))
        assert store.check_projections() == []  # gc took nothing a check needs


def test_gc_removes_a_killed_add_artifact_s_staging_file_once_older_than_its_grace(
    db_path: Path, tmp_path: Path
) -> None:
    with fe.Store.open(db_path) as store:
        store.start_run("wf", run_id="r1")
        staging = store.artifact_files.root / "tmp"
    for _ in range(2):
        _kill_when([str(ARTIFACT_WORKER), "killed-staging", str(db_path), "r1"], b"staging", tmp_path)
    partial = sorted(staging.iterdir())
    assert len(partial) == 2 and all(p.stat().st_size > 0 for p in partial)
    _age(partial[:1])
    with fe.Store.open(db_path) as store:
        report = store.gc(artifact_grace_seconds=600)
        assert (report.leftover_files_removed, report.leftover_bytes_removed) == (1, 3 << 20)
        assert [p.exists() for p in partial] == [False, True]  # the young one is kept
        _age(partial[1:])
        assert store.gc(artifact_grace_seconds=600).leftover_files_removed == 1
        assert not list(staging.iterdir())
        assert store.verify_run("r1").ok
        assert store.log.run_exists("r1") and not store.get_run_record("r1").get("x-artifacts")
