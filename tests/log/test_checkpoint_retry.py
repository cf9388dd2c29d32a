"""A connection whose checkpoint could not restart the WAL does not try again at every commit.

Amid several writer processes, every commit past the checkpoint interval used to try a PASSIVE
checkpoint while the others' reads held a few frames back: one commit in three or four paid
for a partial copy and an fsync. Now it tries again once the WAL has grown by
``_RETRY_FRAMES`` (and at every commit once it is past ``URGENT_BYTES``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from forkline_es.log import checkpoint as ck
from forkline_es.log.connection import checkpoint_frames, open_connection


def _commits_counting_passive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commits: int
) -> tuple[int, int]:
    """(PASSIVE attempts, WAL frames at the end) over ``commits`` one-row commits, every
    checkpoint answering "busy" (another connection checkpointing, say)."""
    calls: list[str] = []

    def busy(conn: Any, mode: str, wait: float, waiter: Any, schema: str = "main") -> ck.WalCheckpoint:
        calls.append(mode)
        return ck.WalCheckpoint(False, -1, -1)

    monkeypatch.setattr(ck, "checkpoint", busy)
    conn = open_connection(tmp_path / "runs.db")
    conn.execute("CREATE TABLE t (x TEXT)")
    for i in range(commits):
        conn.execute("INSERT INTO t VALUES (?)", ("x" * 100 + str(i),))
    frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1]  # frames in the WAL
    conn.close()
    assert calls and set(calls) == {"PASSIVE"}
    return len(calls), int(frames)


def test_a_busy_checkpoint_is_tried_again_only_after_the_retry_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    interval = checkpoint_frames("normal")
    attempts, frames = _commits_counting_passive(tmp_path, monkeypatch, interval + 3 * ck._RETRY_FRAMES)
    assert frames >= interval + 2 * ck._RETRY_FRAMES  # each commit wrote at least a frame
    past = frames - interval
    # about one attempt per _RETRY_FRAMES past the interval, not one per commit
    assert 1 <= attempts <= past // ck._RETRY_FRAMES + 2, (attempts, frames)
