"""Content-addressed artifact files beside the database: ``<db>.artifacts/``.

The log records where an artifact's bytes are and what they hash to; the path is only a
pointer, the checksum is the truth. Content lives under ``objects/<2 hex>/<62 hex>`` of
its sha256, so the same bytes are stored once whatever run or name registers them, and a
file is never rewritten in place: new content is written to a temporary file, fsynced,
and renamed into place (``os.replace`` is atomic on one filesystem), so a reader never
sees half a file. A run's own folder ``runs/<run>/`` holds its ``manifest.json``.

A ``":memory:"`` store keeps its artifacts in a temporary folder that lives as long as
the store object (the database itself dies with the process).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Final

from forkline_es.errors import InvalidRequest, StoreError

__all__ = ["ArtifactFiles", "Staged", "file_checksum"]

_CHUNK: Final = 1 << 20
_SAFE_RUN: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z")


def file_checksum(path: Path) -> tuple[int, str]:
    """(size in bytes, ``sha256:<hex>``) of a file, read in 1 MB chunks."""
    with open(path, "rb") as f:
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


@contextlib.contextmanager
def _own_files(root: Path, what: str) -> Iterator[None]:
    """An OS error on the store's own files (a full disk, a read-only folder) as a StoreError.

    The source a caller hands in is not ours: failing to read it is ``invalid-request``
    (``_chunks``), which this lets through.
    """
    try:
        yield
    except OSError as e:
        raise StoreError(
            f"{what} under {root}: {e}; nothing was recorded (free space or fix the folder's "
            "permissions, then retry)"
        ) from e


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

    def resolve(self, relative: str) -> Path | None:
        """The file a recorded relative path names, or None when it would leave the root."""
        p = PurePosixPath(relative)
        if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts):
            return None
        return self.root.joinpath(*p.parts)

    # -- writing --------------------------------------------------------------------------

    def _temp(self) -> tuple[IO[bytes], Path]:
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=tmp, prefix="incoming-")
        return os.fdopen(fd, "wb"), Path(name)

    def stage(self, source: bytes | bytearray | memoryview | str | os.PathLike[str]) -> Staged:
        """Copy ``source`` (bytes, or a file path, streamed) to a fsynced temporary file.

        A source that cannot be read is ``invalid-request``; our copy that cannot be
        written (or closed: that flushes too) is a StoreError.
        """
        h = hashlib.sha256()
        size = 0
        with _own_files(self.root, "staging an artifact"):
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
        return Staged(temp, digest, size, self.object_path(digest))

    def place(self, staged: Staged) -> None:
        """Rename a staged file into its content address (kept as is when already there)."""
        target = self.root / staged.path
        with _own_files(self.root, "placing an artifact"):
            if target.exists():
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
        kept: an ``add_artifact`` places its file just before its event commits.
        Returns (files removed, bytes removed).
        """
        cutoff = time.time() - grace_seconds
        files = size = 0
        for top in ("objects", "runs"):
            base = self.root / top
            if not base.is_dir():
                continue
            for path in sorted(base.rglob("*"), reverse=True):  # children before their folders
                relative = path.relative_to(self.root).as_posix()
                if path.is_dir():
                    with contextlib.suppress(OSError):
                        path.rmdir()  # only succeeds when empty
                    continue
                stat = path.stat()
                if relative in referenced or stat.st_mtime > cutoff:
                    continue
                path.unlink(missing_ok=True)
                files += 1
                size += stat.st_size
        return files, size

    def write(self, relative: str, data: bytes) -> None:
        """Write a small file (a manifest) atomically: temp file, fsync, rename."""
        target = self.resolve(relative)
        assert target is not None, relative
        with _own_files(self.root, f"writing {relative}"):
            out, temp = self._temp()
            try:
                with out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(temp, target)
            except BaseException:
                temp.unlink(missing_ok=True)
                raise
            _fsync_dir(target.parent)
