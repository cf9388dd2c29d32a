"""``copy_store``: move a whole store to another location, on the same or another backend.

The log-level tables go over as they are (``forkline_es.log.copy``): positions, digests,
prev links, payload values, eviction records, the end of the log and the consumers'
checkpoints. The projections are refolded on the destination from the copied log, so
``verify --all`` and ``rebuild --check`` hold there as they did on the source. Artifact
files are copied when both stores have a folder (``CopyReport.artifacts_skipped`` says why
not otherwise); content-addressed files already present are kept.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISREG

from forkline_es.errors import InvalidRequest, StoreError
from forkline_es.log.copy import copy_log, refuse_non_empty
from forkline_es.store import Store

__all__ = ["CopyReport", "copy_store"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What ``copy_store`` did: rows copied, events refolded, artifact files copied."""

    log_rows: int
    events_folded: int
    artifact_files: int
    artifacts_skipped: str | None  # why no artifact file was copied, when none could be


def _folder(store: Store) -> Path | None:
    try:
        return store.artifact_files.root
    except InvalidRequest:  # a PostgreSQL store opened without artifacts=
        return None


def _copy_files(src: Path, dst: Path) -> int:
    """Every regular file under ``src`` (staging files in ``tmp/`` and links left out) into
    ``dst`` at the same relative path; a file already there is kept."""
    copied = 0
    for folder, dirs, files in os.walk(src):
        here = Path(folder)
        rel = here.relative_to(src)
        dirs[:] = [
            d for d in dirs if S_ISDIR(os.lstat(here / d).st_mode) and not (rel == Path(".") and d == "tmp")
        ]
        for name in files:
            source = here / name
            if not S_ISREG(os.lstat(source).st_mode):
                continue
            target = dst / rel / name
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            copied += 1
    return copied


def copy_store(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    src_artifacts: str | os.PathLike[str] | None = None,
    dst_artifacts: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> CopyReport:
    """Copy the store at ``src`` into a new, empty store at ``dst`` (a file path or a
    ``postgresql://`` DSN each). A ``dst`` that holds anything is refused with
    ``invalid-request`` before a row is written. ``progress(done, total)``: log rows copied.

    Copy a quiet store: rows appended to ``src`` during the copy are not carried over. A
    copy that fails half-way leaves a partial destination: drop it and copy again.
    """
    if os.fspath(src) == os.fspath(dst):
        raise InvalidRequest("the source and the destination of a copy are the same store")
    with (
        Store.open(src, read_only=True, artifacts=src_artifacts) as source,
        Store.open(dst, artifacts=dst_artifacts) as target,
    ):
        refuse_non_empty(target.backend, target.path)
        # The refold at the end drops and creates the projection tables, which on PostgreSQL
        # only their owner may: tried first on the empty store, so that a role that may not
        # is refused before a row is written, not after every row was.
        target.rebuild_projections()
        rows = copy_log(source.backend, target.backend, progress)
        folded = target.rebuild_projections()
        from_folder, to_folder = _folder(source), _folder(target)
        skipped: str | None = None
        files = 0
        if from_folder is None:
            skipped = "the source has no artifact folder (open it with src_artifacts=)"
        elif to_folder is None:
            skipped = "the destination has no artifact folder (give dst_artifacts=)"
        elif from_folder.is_dir():
            try:
                files = _copy_files(from_folder, to_folder)
            except OSError as e:
                raise StoreError(f"copying artifact files to {to_folder}: {e}") from e
    return CopyReport(rows, folded, files, skipped)
