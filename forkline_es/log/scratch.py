"""Where ``rebuild --check`` keeps its scratch copy of the database, and how gc finds stale ones.

The copy holds every payload value of the database, so it lives beside it, under the same
permissions, never in the system's temporary folder, and under a name only it uses:
``<db>.check-<16 hex>`` (plus SQLite's ``-wal``, ``-shm`` and ``-journal`` beside it). A
check removes its copy when it ends; a check that was killed cannot, and ``gc`` removes
such a copy once every file of it is older than its grace period (a live check writes to
its copy while it rebuilds, and only compares for a short while after).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from typing import Final

from forkline_es.errors import StoreError

__all__ = ["CHECK_COPY_INFIX", "new_check_copy", "remove_check_copy", "sweep_check_copies"]

#: A check copy is named ``<db>`` + this + 16 lower-case hex digits.
CHECK_COPY_INFIX: Final = ".check-"
_SUFFIXES: Final = ("", "-wal", "-shm", "-journal")
_TOKEN: Final = re.compile(r"([0-9a-f]{16})(-wal|-shm|-journal)?\Z")


def _in_memory(db_path: str) -> bool:
    return db_path in ("", ":memory:") or db_path.startswith("file::memory:")


def new_check_copy(db_path: str) -> str:
    """Create an empty scratch copy beside ``db_path``, readable by whom the database is
    (SQLite gives its ``-wal`` and ``-shm`` the same mode); ``":memory:"`` for an in-memory
    store. Returns its path."""
    if _in_memory(db_path):
        return ":memory:"
    path = f"{db_path}{CHECK_COPY_INFIX}{secrets.token_hex(8)}"
    try:
        mode = stat.S_IMODE(os.stat(db_path).st_mode)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
    except OSError as e:
        raise StoreError(
            f"cannot create the check's scratch copy {path}: {e}; it is made beside the database "
            "(free space or fix the folder's permissions, then retry)"
        ) from e
    return path


def remove_check_copy(path: str) -> None:
    """Delete a copy and SQLite's files beside it (a no-op for ``":memory:"``)."""
    if path == ":memory:":
        return
    for suffix in _SUFFIXES:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path + suffix)


def sweep_check_copies(db_path: str, grace_seconds: float) -> tuple[int, int]:
    """Delete the check copies beside ``db_path`` whose every file is older than
    ``grace_seconds``: what killed checks left. Returns (files removed, bytes removed)."""
    if _in_memory(db_path):
        return 0, 0
    folder, name = os.path.split(os.path.abspath(db_path))
    prefix = name + CHECK_COPY_INFIX
    copies: dict[str, list[tuple[str, os.stat_result]]] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            found = _TOKEN.match(entry.name[len(prefix) :]) if entry.name.startswith(prefix) else None
            if found is None or not entry.is_file(follow_symlinks=False):
                continue
            with contextlib.suppress(FileNotFoundError):  # the check ended meanwhile
                copies.setdefault(found.group(1), []).append((entry.path, entry.stat(follow_symlinks=False)))
    cutoff = time.time() - grace_seconds
    files = size = 0
    for parts in copies.values():
        if max(st.st_mtime for _, st in parts) > cutoff:
            continue  # a check may still be using it
        for path, st in parts:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
                files += 1
                size += st.st_size
    return files, size
