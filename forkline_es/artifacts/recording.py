"""Recording artifacts, manifests and observations on a run: check, then append one event.

Each operation validates its arguments, prepares what goes on disk, and appends through
``Run._append_event``, whose idempotency check runs first: a repeated call returns the
original seq and writes nothing; a call that contradicts an earlier one under the same
key is a ``conflict`` and writes nothing, and so is other content under a used artifact
name or a second, different manifest, whatever the key (``RunState.check_artifact``).
Files are placed by the append's ``check``, i.e. only once the append is decided, and
before the event that points at them commits.

All three are accepted on a concluded run too: outputs are often measured and archived
after the run ended, and they describe the run without changing its outcome.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from forkline_es.artifacts.manifest import Manifest, build_manifest, capture, manifest_file_bytes
from forkline_es.artifacts.observations import check_metric
from forkline_es.errors import InvalidRequest, RunNotRetained
from forkline_es.log.events import ArtifactAdded, ManifestRecorded, Observed, RunStarted
from forkline_es.recording.state import check_path, check_text

if TYPE_CHECKING:
    from collections.abc import Iterable

    from forkline_es.recording.run import Run

__all__ = ["Source", "add_artifact", "observe", "record_manifest"]

Source = bytes | bytearray | memoryview | str | os.PathLike[str]


def add_artifact(
    run: Run,
    source: Source,
    kind: str,
    content_type: str | None = None,
    step: str | None = None,
    name: str | None = None,
    key: str | None = None,
) -> int:
    """Store ``source``'s bytes content-addressed and append ``artifact-added``; its seq."""
    check_text(kind, "kind")
    check_text(content_type, "content_type", optional=True)
    check_text(name, "name", optional=True)
    if step is not None:
        check_path(step)
    if isinstance(source, bytes | bytearray | memoryview):
        default_name = None
    elif isinstance(source, str | os.PathLike):
        if not os.path.isfile(source):
            raise InvalidRequest(f"artifact source {os.fspath(source)!r} is not a readable file")
        default_name = os.path.basename(os.fspath(source))
    else:
        raise InvalidRequest(f"an artifact source is bytes or a file path, not {type(source).__name__}")
    files = run._store.artifact_files
    staged = files.stage(source)
    try:
        label = name or default_name or staged.sha256
        event = ArtifactAdded(
            name=label,
            path=staged.path,
            sha256=staged.sha256,
            size_bytes=staged.size_bytes,
            kind=kind,
            content_type=content_type,
            step=step,
        )

        def check_and_place() -> None:
            run._state.check_artifact(label, staged.sha256)
            _refuse_evicted(run)
            files.place(staged)

        return run._append_event(event, key or f"artifact:{label}", (), check_and_place)
    finally:
        files.discard(staged)  # a no-op once placed


def _refuse_evicted(run: Run) -> None:
    """An evicted run takes no more events (the log refuses them inside the append), so no
    file is placed for one: asked before the file is written, not only at the commit."""
    if run._store.log.eviction(run.id) is not None:
        raise RunNotRetained(
            f"run {run.id!r} was evicted (its eviction is recorded), so it takes no more artifacts "
            "or manifests; nothing was written (record into a new run instead)"
        )


def _pins(run: Run) -> dict[str, str] | None:
    first = run._store._log_row(run.id, 1)
    event = first.event() if first is not None else None
    return event.pins if isinstance(event, RunStarted) else None


def record_manifest(
    run: Run,
    packages: Iterable[str] = (),
    config: Any = None,
    key: str | None = None,
    **facts: Any,
) -> Manifest:
    """Capture, merge with ``facts``, digest, write manifest.json, append ``manifest-recorded``."""
    from forkline_es import __version__

    if isinstance(packages, str):
        raise InvalidRequest("packages is a list of distribution names, not one string")
    manifest = build_manifest(capture(__version__, _pins(run), packages, config), facts)
    files = run._store.artifact_files
    path = files.manifest_path(run.id)
    event = ManifestRecorded(
        facts=manifest.facts,
        digest=manifest.digest,
        unknown_fields=manifest.unknown_fields,
        complete=manifest.complete,
        path=path,
    )
    data = manifest_file_bytes(run.id, manifest)

    def check_and_write() -> None:
        run._state.check_manifest(manifest.digest)
        _refuse_evicted(run)
        files.write(path, data)

    seq = run._append_event(event, key or "manifest", (), check_and_write)
    return dataclasses.replace(manifest, seq=seq)


def observe(
    run: Run,
    name: str,
    value: int | float,
    unit: str | None = None,
    step: str | None = None,
    key: str | None = None,
) -> int:
    """Append ``observed``: one value per (run, name, step); the same again is idempotent."""
    check_text(name, "metric name")
    checked = check_metric(value, name)
    check_text(unit, "unit", optional=True)
    if step is not None:
        check_path(step)
    event = Observed(name=name, value=checked, unit=unit, step=step)
    where = f"observe:{name}" if step is None else f"observe:{name}@{step}"
    return run._append_event(event, key or where, (), lambda: None)
