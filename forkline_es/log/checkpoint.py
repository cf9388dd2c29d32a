"""Keeping the WAL bounded: the checkpoint policy each connection runs after its commits.

SQLite's own auto-checkpoint is PASSIVE: it copies WAL frames into the database file but
never waits for anyone, and the WAL file only starts again from its beginning when a
writer finds every frame copied and no reader left in the WAL. With two or more writer
processes that moment never comes (one always holds a read lock, or has just appended
a frame), and the WAL grew by hundreds of MB a second (issue 20, item 3).

``WalBound`` replaces the auto-checkpoint (``sqlite3_wal_hook``; it is called after
every commit with the WAL's frame count, which costs one Python call). Past the usual
interval it copies what it can without waiting (PASSIVE). When that copied every frame
(but the few that other writers' short reads hold back, ``_LAG_FRAMES``), it asks for a
RESTART, which holds the write lock for at most ``SHORT_WAIT`` while it
copies the last frames and waits for readers to leave the WAL, so that the next writer
starts the WAL again from its beginning (after a timeout this connection does not ask
again for ``_BACKOFF``, 0.1 s).

When a reader's snapshot keeps frames from being copied, nothing is waited for until
the WAL reaches ``URGENT_BYTES``. From there each committing writer waits, inside its
hook, after its commit and holding no lock, up to ``READER_WAIT`` for the reader to end,
trying PASSIVE again every few milliseconds: writers are slowed down, the reader is not,
and with no reader older than ``READER_WAIT`` the WAL stays under ``WAL_BOUND``. A reader
older than that is not waited for again by that connection (the WAL then grows until it
ends, and is written out to disk every ``_FLUSH_BYTES`` so that the checkpoint after it
has little left to sync); once it has ended, the next commit's checkpoints copy
everything and restart it.

``journal_size_limit`` then cuts a WAL file grown past ``LIMIT_BYTES`` back to that size
at the first commit after the restart. ``truncate`` is gc's checkpoint: it empties the
WAL file (TRUNCATE) in attempts that each hold writers for at most ``SHORT_WAIT``.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import apsw

from forkline_es._logging import get_logger

__all__ = [
    "LIMIT_BYTES",
    "READER_WAIT",
    "SHORT_WAIT",
    "URGENT_BYTES",
    "WAL_BOUND",
    "WalBound",
    "WalCheckpoint",
    "checkpoint",
    "install",
    "truncate",
]

#: The WAL file stays below this with any number of writers and no reader older than READER_WAIT.
WAL_BOUND: Final = 64 * 1024 * 1024
#: From here on a RESTART waits for a reader that keeps frames from being copied.
URGENT_BYTES: Final = 40 * 1024 * 1024
#: A WAL file grown past this is cut back to it at the first commit after it restarts.
LIMIT_BYTES: Final = 24 * 1024 * 1024
#: How long a checkpoint holds writers while it waits for readers: normally, and near the bound.
SHORT_WAIT: Final = 0.05
READER_WAIT: Final = 1.0
#: After a RESTART that timed out, this connection does not wait again for this long.
_BACKOFF: Final = 0.1
#: Bytes a WAL frame adds to a page: its frame header.
_FRAME_HEADER: Final = 24
#: Uncopied frames that still count as "all copied": writers in other processes read
#: from the commit before theirs, so a PASSIVE checkpoint amid them leaves a few behind.
_LAG_FRAMES: Final = 256
#: Past the bound, the WAL is written out to disk each time it grew by this much.
_FLUSH_BYTES: Final = 32 * 1024 * 1024
#: After a checkpoint that could not restart the WAL, this connection tries again only once
#: the WAL has grown by this many frames (unless it is past ``URGENT_BYTES``). Amid several
#: writer processes, every commit past the interval used to try a PASSIVE checkpoint (one
#: commit in three or four), each copying a few frames behind an fsync of the WAL.
_RETRY_FRAMES: Final = 500

_log = get_logger("forkline_es.log")

Waiter = Callable[[int], bool]


@dataclass(frozen=True, slots=True)
class WalCheckpoint:
    """One checkpoint's outcome: ``done`` when it did all its mode asks; frames in the WAL
    (``log``) and frames copied into the database file (``copied``) as it left them."""

    done: bool
    log: int
    copied: int

    @property
    def uncopied(self) -> int:
        """Frames left uncopied: a reader's snapshot needs the pages they would overwrite."""
        return max(self.log - self.copied, 0) if self.copied >= 0 else 0

    @property
    def reader_behind(self) -> bool:
        """More frames left uncopied than the few that writers' own short reads hold back."""
        return self.uncopied > _LAG_FRAMES


def _until(deadline: float) -> Waiter:
    """A busy handler that retries after short sleeps until ``deadline`` (monotonic)."""

    def waiting(prior_calls: int) -> bool:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(0.000_05 * (1 << min(prior_calls, 6)), 0.002, left))
        return True

    return waiting


def checkpoint(conn: Any, mode: str, wait: float, waiter: Waiter, schema: str = "main") -> WalCheckpoint:
    """``PRAGMA wal_checkpoint(mode)`` waiting at most ``wait`` seconds for locks and
    readers, then the connection's own busy handler ``waiter`` again."""
    conn.set_busy_handler(_until(time.monotonic() + wait))
    try:
        ((busy, log, copied),) = conn.execute(f"PRAGMA {schema}.wal_checkpoint({mode})").fetchall()
    finally:
        conn.set_busy_handler(waiter)
    return WalCheckpoint(not busy, int(log), int(copied))


class WalBound:
    """The checkpoint policy of one connection (see the module docstring); ``install``'s
    hook calls ``after`` once a commit leaves the usual interval's frames in the WAL."""

    __slots__ = ("_flushed", "_gave_up", "_page", "_retry_at", "_waiter", "due")

    def __init__(self, waiter: Waiter) -> None:
        self._waiter = waiter
        #: No checkpoint before the WAL holds this many frames (0: at the usual interval).
        self.due = 0
        self._retry_at = 0.0  # no RESTART attempt before this (monotonic)
        self._gave_up = False  # waited READER_WAIT for the reader now behind: not again
        self._page = 0  # the page size, read at the first checkpoint
        self._flushed = 0  # WAL bytes past the bound this connection last flushed to disk

    def after(self, conn: Any, schema: str, frames: int) -> None:
        """The checkpoints due after a commit that left ``frames`` frames in the WAL."""
        try:
            self._checkpoint(conn, schema, frames)
        except apsw.Error as e:  # the commit stands; a failed checkpoint only waits for the next
            _log.debug("wal_checkpoint_failed", error=str(e))

    def _checkpoint(self, conn: Any, schema: str, frames: int) -> None:
        if not self._page:
            self._page = int(conn.execute(f"PRAGMA {schema}.page_size").fetchall()[0][0])
        size = frames * (self._page + _FRAME_HEADER)
        if size < WAL_BOUND:
            self._flushed = 0  # the WAL restarted since the last flush
        deadline = 0.0
        while True:
            passive = checkpoint(conn, "PASSIVE", 0.0, self._waiter, schema)
            now = time.monotonic()
            if passive.done and not passive.reader_behind:
                self._gave_up = False
                if now >= self._retry_at:
                    restart = checkpoint(conn, "RESTART", SHORT_WAIT, self._waiter, schema)
                    if not restart.done and restart.log >= 0:  # timed out (-1: another checkpoint ran)
                        self._retry_at = now + _BACKOFF
                        self.due = frames + _RETRY_FRAMES
                else:
                    self.due = frames + _RETRY_FRAMES
                return
            # Another connection is checkpointing, or a reader's snapshot holds frames back.
            if size >= WAL_BOUND:
                self._flush(conn, schema, size)
            if size < URGENT_BYTES:
                self.due = frames + _RETRY_FRAMES
            if size < URGENT_BYTES or size >= WAL_BOUND or self._gave_up:
                return
            if not deadline:
                deadline = now + READER_WAIT
            elif now >= deadline:
                self._gave_up = True
                _log.info("wal_reader_waited_out", wal_bytes=size, waited=READER_WAIT)
                return
            time.sleep(0.005)  # this writer's next append waits; no lock is held meanwhile

    def _flush(self, conn: Any, schema: str, size: int) -> None:
        """While a reader older than READER_WAIT lets the WAL grow past the bound, write it
        out to disk every ``_FLUSH_BYTES``: the checkpoint that follows the reader must sync
        the WAL before it copies, and a GB of dirty WAL took seconds to sync."""
        if size < self._flushed + _FLUSH_BYTES:
            return
        self._flushed = size
        fd = os.open(conn.db_filename(schema) + "-wal", os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: The hook of each connection set up by ``install``: its busy handler is put back after a checkpoint.
_installed: weakref.WeakKeyDictionary[Any, WalBound] = weakref.WeakKeyDictionary()


def install(conn: Any, frames: int, waiter: Waiter) -> None:
    """Make ``WalBound`` the checkpointer of ``conn``, whose busy handler is ``waiter``.

    It replaces SQLite's auto-checkpoint (``PRAGMA wal_autocheckpoint`` then reads 0).
    """
    bound = WalBound(waiter)
    after, ok = bound.after, apsw.SQLITE_OK

    # A plain function, not the instance: SQLite calls it after every commit, and calling
    # an object's __call__ costs about twice as much (callgrind, per append).
    def hook(conn: Any, schema: str, n: int) -> int:
        if n >= frames:
            if n >= bound.due:
                after(conn, schema, n)
        elif bound.due:
            bound.due = 0  # the WAL started again (here or in another process)
        return ok

    conn.set_wal_hook(hook)
    _installed[conn] = bound


def truncate(conn: Any, within: float, schema: str = "main") -> WalCheckpoint:
    """Empty the WAL file, trying for ``within`` seconds; each attempt holds writers for at
    most ``SHORT_WAIT``. Returns the last attempt (``done`` when the WAL is empty)."""
    hook = _installed.get(conn)
    waiter = hook._waiter if hook is not None else _until(time.monotonic() + within)
    deadline = time.monotonic() + within
    while True:
        passive = checkpoint(conn, "PASSIVE", 0.0, waiter, schema)
        if passive.done and not passive.reader_behind:
            result = checkpoint(conn, "TRUNCATE", SHORT_WAIT, waiter, schema)
            if result.done:
                return result
        else:  # another checkpoint is running, or a reader keeps frames from being copied
            result = WalCheckpoint(False, passive.log, passive.copied)
        if time.monotonic() + 0.05 >= deadline:
            return result
        time.sleep(0.05)
