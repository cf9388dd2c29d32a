"""Content-addressed artifact files beside the database: ``<db>.artifacts/``.

The log records where an artifact's bytes are and what they hash to; the path is only a
pointer, the checksum is the truth. Content lives under ``objects/<2 hex>/<62 hex>`` of
its sha256, so the same bytes are stored once whatever run or name registers them, and a
file is never rewritten in place: new content is written to a temporary file, fsynced,
and renamed into place (``os.replace`` is atomic on one filesystem), so a reader never
sees half a file. A run's own folder ``runs/<run>/`` holds its ``manifest.json``.

Nothing inside the folder is reached through a symbolic link: a write refuses one on its
way (``links``), verify reports one, and the sweeps neither follow nor delete one. The
folder itself may be a link (an operator's choice of disk). Staging files in ``tmp/``
that a killed writer left behind are collected by ``sweep_staging`` once they are older
than gc's grace period.

A ``":memory:"`` store keeps its artifacts in a temporary folder that lives as long as
the store object (the database itself dies with the process).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from stat import S_ISLNK, S_ISREG
from typing import IO, Final

from forkline_es.errors import InvalidRequest, StoreError

__all__ = ["STAGING_PREFIX", "ArtifactFiles", "Staged", "file_checksum", "open_regular"]

_CHUNK: Final = 1 << 20
#: Staging files in ``tmp/`` start with this; ``sweep_staging`` collects stale ones.
STAGING_PREFIX: Final = "incoming-"
_SAFE_RUN: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z")


def open_regular(path: Path) -> io.BufferedReader:
    """``path`` opened for reading when it is a regular file; anything else (a folder, a
    FIFO, a device) is an ``OSError`` without waiting: opening a FIFO for reading waits for
    a writer that may never come, so it is opened without blocking and looked at first."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_checksum(path: Path) -> tuple[int, str]:
    """(size in bytes, ``sha256:<hex>``) of a regular file, read in 1 MB chunks."""
    with open_regular(path) as f:
        h = hashlib.file_digest(f, "sha256")
        size = f.tell()
    return size, "sha256:" + h.hexdigest()


@dataclass(slots=True)
class Staged:
    """Content written to a temporary file and fsynced, not yet in its place."""

    temp: Path
    sha256: str
    size_bytes: int
    path: str  # where it goes, relative to the root (POSIX separators)
    addressed: bool = True  # at its content address: an existing file there is kept as is


#: What a failed write before the event's commit means for the caller.
NOTHING_RECORDED: Final = "nothing was recorded (free space or fix the folder's permissions, then retry)"
#: ... and a failed placement after it (``place`` and ``write`` run once the event committed).
RECORDED_NOT_PLACED: Final = (
    "the event is recorded but its file is not in place (free space or fix the folder's "
    "permissions, then repeat the same call: it places the file)"
)


@contextlib.contextmanager
def _own_files(root: Path, what: str, outcome: str = NOTHING_RECORDED) -> Iterator[None]:
    """An OS error on the store's own files (a full disk, a read-only folder) as a StoreError.

    The source a caller hands in is not ours: failing to read it is ``invalid-request``
    (``_chunks``), which this lets through.
    """
    try:
        yield
    except OSError as e:
        raise StoreError(f"{what} under {root}: {e}; {outcome}") from e


def _chunks(source: bytes | bytearray | memoryview | str | os.PathLike[str]) -> Iterator[bytes]:
    """The caller's content, a file streamed in 1 MB chunks; failing to read it is theirs."""
    if isinstance(source, bytes | bytearray | memoryview):
        yield bytes(source)
        return
    try:
        with open(source, "rb") as f:
            while chunk := f.read(_CHUNK):
                yield chunk
    except OSError as e:
        raise InvalidRequest(f"cannot read artifact source: {e}") from None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ArtifactFiles:
    """One store's artifact folder: stage, place, resolve and check content-addressed files."""

    def __init__(self, root: Path, keep: object = None) -> None:
        self.root = root
        self._keep = keep  # a TemporaryDirectory for ":memory:" stores, alive with this object

    @classmethod
    def for_database(cls, db_path: str) -> ArtifactFiles:
        """``<db>.artifacts/`` beside a database file; a temporary folder for ``":memory:"``."""
        if db_path in ("", ":memory:") or db_path.startswith("file::memory:"):
            tmp = tempfile.TemporaryDirectory(prefix="forkline-es-artifacts-")
            return cls(Path(tmp.name), tmp)
        return cls(Path(db_path + ".artifacts"))

    # -- paths ----------------------------------------------------------------------------

    @staticmethod
    def object_path(sha256: str) -> str:
        hexdigest = sha256.removeprefix("sha256:")
        return f"objects/{hexdigest[:2]}/{hexdigest[2:]}"

    @staticmethod
    def run_folder(run_id: str) -> str:
        """A run's folder name: the id itself when it is a safe file name, else its hash."""
        if _SAFE_RUN.match(run_id) and run_id not in (".", ".."):
            return f"runs/{run_id}"
        return "runs/id-" + hashlib.sha256(run_id.encode()).hexdigest()[:40]

    def manifest_path(self, run_id: str) -> str:
        return f"{self.run_folder(run_id)}/manifest.json"

    def link_on(self, relative: str) -> Path | None:
        """The first symbolic link on the way from the root to ``relative`` (the file itself
        included), or None. Components that do not exist yet end the walk."""
        here = self.root
        for part in PurePosixPath(relative).parts:
            here = here / part
            try:
                mode = os.lstat(here).st_mode
            except FileNotFoundError:
                return None
            except OSError:
                return None  # unreadable: the write or read that follows says what failed
            if S_ISLNK(mode):
                return here
        return None

    def refuse_links(self, relative: str, recorded: bool = False) -> None:
        """StoreError naming the link when ``relative`` would be reached through one.

        A link planted inside the folder would send a write (or gc's delete) anywhere the
        store's user can reach; nothing is written through one. ``recorded``: the call's
        event already committed (the message then says how to place the file).
        """
        link = self.link_on(relative)
        if link is None:
            return
        outcome = (
            "the event is recorded but its file is not in place: remove the link (and check what "
            "it points at), then repeat the same call to place it"
            if recorded
            else "nothing was recorded: remove the link (and check what it points at), then retry"
        )
        raise StoreError(
            f"{link} is a symbolic link inside the artifact folder {self.root}; the store never "
            f"writes through one, so {outcome}"
        )

    def resolve(self, relative: str) -> Path | None:
        """The file a recorded relative path names, or None when it would leave the root."""
        p = PurePosixPath(relative)
        if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts):
            return None
        return self.root.joinpath(*p.parts)

    # -- writing --------------------------------------------------------------------------

    def _temp(self) -> tuple[IO[bytes], Path]:
        self.refuse_links("tmp")
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=tmp, prefix=STAGING_PREFIX)
        return os.fdopen(fd, "wb"), Path(name)

    def stage(
        self, source: bytes | bytearray | memoryview | str | os.PathLike[str], path: str | None = None
    ) -> Staged:
        """Copy ``source`` (bytes, or a file path, streamed) to a fsynced temporary file.

        It goes to its content address, or to ``path`` (a run's ``manifest.json``, replaced
        when placed). A link on its way is refused here, before anything is recorded. A
        source that cannot be read is ``invalid-request``; our copy that cannot be written
        (or closed: that flushes too) is a StoreError.
        """
        if path is not None:
            self.refuse_links(path)
        h = hashlib.sha256()
        size = 0
        with _own_files(self.root, "staging an artifact" if path is None else f"writing {path}"):
            out, temp = self._temp()
            try:
                with out:
                    for chunk in _chunks(source):
                        h.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
                    out.flush()
                    os.fsync(out.fileno())
            except BaseException:
                temp.unlink(missing_ok=True)
                raise
        digest = "sha256:" + h.hexdigest()
        if path is not None:
            return Staged(temp, digest, size, path, addressed=False)
        staged = Staged(temp, digest, size, self.object_path(digest))
        try:
            self.refuse_links(staged.path)
        except StoreError:
            self.discard(staged)
            raise
        return staged

    def place(self, staged: Staged) -> None:
        """Rename a staged file into place, once the event that points at it committed.

        At a content address an existing file is kept as is (same address, same content);
        a run's ``manifest.json`` is replaced, so a repeat of the call repairs it. Any
        error here comes after the commit, and says that repeating the call places the file.
        """
        self.refuse_links(staged.path, recorded=True)
        target = self.root / staged.path
        with _own_files(self.root, f"placing {staged.path}", RECORDED_NOT_PLACED):
            if staged.addressed and target.exists():
                staged.temp.unlink(missing_ok=True)  # same address, same content: never rewritten
                # Touched: an orphan file reused by a new artifact is young again, so a gc
                # sweeping concurrently keeps it within its grace period (``sweep``).
                os.utime(target)
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged.temp, target)
            _fsync_dir(target.parent)

    def discard(self, staged: Staged) -> None:
        staged.temp.unlink(missing_ok=True)

    def sweep(self, referenced: set[str], grace_seconds: float = 3600.0) -> tuple[int, int]:
        """Delete files under ``objects/`` and ``runs/`` that no retained row references.

        Content is shared between runs, so eviction cannot delete a run's files; ``gc``
        sweeps what nothing references any more. A file younger than ``grace_seconds`` is
        kept: an ``add_artifact`` places (or touches) its file just after its event
        commits, which a gc reading an earlier snapshot does not see. Symbolic links are
        neither followed nor deleted. Returns (files removed, bytes removed).
        """
        cutoff = time.time() - grace_seconds
        files = size = 0
        for top in ("objects", "runs"):
            base = self.root / top
            if base.is_symlink() or not base.is_dir():
                continue
            for path in sorted(base.rglob("*"), reverse=True):  # children before their folders
                relative = path.relative_to(self.root).as_posix()
                if self.link_on(relative) is not None:
                    continue
                if path.is_dir():
                    with contextlib.suppress(OSError):
                        path.rmdir()  # only succeeds when empty
                    continue
                found = path.stat()
                if relative in referenced or found.st_mtime > cutoff:
                    continue
                path.unlink(missing_ok=True)
                files += 1
                size += found.st_size
        return files, size

    def sweep_staging(self, grace_seconds: float = 3600.0) -> tuple[int, int]:
        """Delete staging files in ``tmp/`` older than ``grace_seconds``: a killed
        ``add_artifact`` or ``record_manifest`` left them (a live one's file is younger,
        written to while staged and placed right after its commit). Returns (files, bytes)."""
        tmp = self.root / "tmp"
        if self.link_on("tmp") is not None or not tmp.is_dir():
            return 0, 0
        cutoff = time.time() - grace_seconds
        files = size = 0
        for entry in os.scandir(tmp):
            if not entry.name.startswith(STAGING_PREFIX):
                continue
            try:
                found = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # placed or discarded meanwhile
            if not S_ISREG(found.st_mode) or found.st_mtime > cutoff:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                files += 1
                size += found.st_size
        return files, size
