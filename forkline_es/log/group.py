"""Group commit: the appends of several threads of one process in one transaction.

Why: a commit costs a WAL write (and at ``durability="full"`` an fsync) whatever it holds,
so callers that commit one event each are bound by commits per second. When several
threads append through one store at once, the first becomes the *leader*: it takes every
append waiting at that moment and commits them together, each in a savepoint of its own,
while the next callers queue behind it; then it hands leadership on and returns. Nobody
returns before the transaction holding its rows committed, so every acknowledgement keeps
its durability (docs/architecture.md, "Group commit").

One caller's failure is its own: a refused append (a taken seq, an evicted run, a fold
that raised) rolls back to that caller's savepoint and is raised in that caller's thread;
the others commit. A failure of the transaction itself (BEGIN, COMMIT, I/O) fails every
caller of the group, none of whose rows is then in the log.

A caller alone pays one uncontended lock and takes the backend's plain ``append``.
There is no thread of our own: the leader is always a caller. Each waiting caller sleeps
on a lock of its own, released when its outcome is ready or when it is handed the lead:
a commit wakes exactly the callers it answered and the next leader, not every waiter
(a condition's ``notify_all`` woke all eight threads of a benchmark after each commit, and
each wake-up costs the interpreter lock: eight threads at ``normal`` recorded 0.58 of one
caller's rate).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.rows import NewRow

__all__ = ["Batch", "GroupCommit", "Outcome", "append_each"]

T = TypeVar("T")

#: One caller's append: its rows and the fold that runs on the same cursor before COMMIT.
Batch = tuple[Sequence[NewRow], Callable[[Cursor], Any] | None]
#: One caller's outcome: (positions, what the fold returned), or the exception to raise.
Outcome = tuple[list[int], Any] | BaseException


def append_each(backend: Backend, batches: Sequence[Batch]) -> list[Outcome]:
    """The fallback for a backend without ``append_group``: one transaction per batch."""
    out: list[Outcome] = []
    for rows, then in batches:
        try:
            out.append(backend.append(rows, then))
        except Exception as e:
            out.append(e)
    return out


class _Waiting:
    """A queued caller: its batch, and its outcome once a leader committed the group."""

    __slots__ = ("batch", "done", "outcome", "wake")

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        self.done = False
        self.outcome: Outcome | None = None
        #: Held until a leader answers this caller or hands it the lead.
        self.wake = threading.Lock()
        self.wake.acquire()


class GroupCommit:
    """Leader/follower group commit over one backend (see the module docstring)."""

    def __init__(self, backend: Backend) -> None:
        self._append = backend.append
        # A backend that can keep each caller's failure its own inside one transaction has
        # ``append_group(batches) -> outcomes`` (SQLite: savepoints); others get one each.
        group = getattr(backend, "append_group", None)
        self._append_group: Callable[[Sequence[Batch]], list[Outcome]] = (
            group if group is not None else lambda batches: append_each(backend, batches)
        )
        self._mutex = threading.Lock()
        self._queue: list[_Waiting] = []
        self._leading = False
        #: Transactions committed and batches they held (the benchmark reads the ratio).
        self.transactions = 0
        self.batches = 0

    def append(
        self, rows: Sequence[NewRow], then: Callable[[Cursor], T] | None = None
    ) -> tuple[list[int], T | None]:
        """``Backend.append``'s contract, committed with whatever other threads append now."""
        with self._mutex:
            alone = not self._leading
            if alone:  # the common case of one thread: the plain append, nothing queued
                self._leading = True
            else:
                me = _Waiting((rows, then))
                self._queue.append(me)
        if alone:
            try:
                return self._append(rows, then)
            finally:
                with self._mutex:
                    self.transactions += 1
                    self.batches += 1
                self._hand_on()
        me.wake.acquire()  # answered, or handed the lead
        if not me.done:
            with self._mutex:
                group, self._queue = self._queue, []  # me among them
            try:
                self._commit(group, me)
            finally:
                self._hand_on()
        outcome = me.outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome

    def _hand_on(self) -> None:
        """The leader is done: the first caller queued meanwhile leads next, else nobody."""
        with self._mutex:
            if self._queue:
                self._queue[0].wake.release()  # ``_leading`` stays set: the lead passes on
            else:
                self._leading = False

    def _commit(self, group: list[_Waiting], leader: _Waiting) -> None:
        """Commit ``group`` (``leader``'s own batch among them), then wake each of the others
        with its outcome."""
        try:
            if len(group) == 1:
                rows, then = group[0].batch
                try:
                    group[0].outcome = self._append(rows, then)
                except BaseException as e:
                    group[0].outcome = e
            else:
                for waiting, outcome in zip(group, self._append_group([w.batch for w in group]), strict=True):
                    waiting.outcome = outcome
            self.transactions += 1
            self.batches += len(group)
        except BaseException as e:  # the group's transaction itself: nobody's rows are in
            for waiting in group:
                waiting.outcome = e
        finally:
            for waiting in group:
                if waiting.outcome is None:
                    waiting.outcome = RuntimeError("group commit ended without an outcome")
                waiting.done = True
                if waiting is not leader:
                    waiting.wake.release()
