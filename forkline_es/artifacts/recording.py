"""Recording artifacts, manifests and observations on a run: check, then append one event.

Each operation validates its arguments, prepares what goes on disk, and appends through
``Run._append_event``, whose idempotency check runs first: a repeated call returns the
original seq and writes nothing; a call that contradicts an earlier one under the same
key is a ``conflict`` and writes nothing, and so is other content under a used artifact
name or a second, different manifest, whatever the key (``RunState.check_artifact``).

A file is staged (written under a temporary name in ``tmp/`` and fsynced) before the
append, and renamed into place only once its event is in the log: after the commit, after
a ``run.batch()`` commits, or when the call turns out to repeat one already recorded. So a
refused call, or one that lost a race to another handle, leaves every file as it was; a
process killed between the commit and the rename leaves an event whose file is missing
(verify says so) until the same call is repeated, which places it.

All three are accepted on a concluded run too: outputs are often measured and archived
after the run ended, and they describe the run without changing its outcome.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from forkline_es._version import __version__
from forkline_es.artifacts.manifest import Manifest, build_manifest, capture, manifest_file_bytes
from forkline_es.artifacts.observations import check_metric
from forkline_es.artifacts.store import ArtifactFiles, Staged
from forkline_es.errors import InvalidRequest, shown
from forkline_es.log.events import ArtifactAdded, EventBody, ManifestRecorded, Observed, RunStarted
from forkline_es.log.rows import LogRow
from forkline_es.paths import check_path
from forkline_es.values import check_text

__all__ = ["Placement", "Source", "add_artifact", "observe", "record_manifest"]

Source = bytes | bytearray | memoryview | str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class Placement:
    """A staged file and its folder: ``place()`` once its event is in the log, else ``discard()``."""

    files: ArtifactFiles
    staged: Staged

    def place(self) -> None:
        self.files.place(self.staged)

    def discard(self) -> None:
        self.files.discard(self.staged)  # a no-op once placed


class _Checks(Protocol):
    def check_artifact(self, name: str, sha256: str) -> None: ...

    def check_manifest(self, digest: str) -> None: ...


class _Host(Protocol):
    @property
    def artifact_files(self) -> ArtifactFiles: ...

    def _log_row(self, run_id: str, seq: int) -> LogRow | None: ...


class Run(Protocol):
    """What these functions use of ``recording.Run``, which sits above them and calls them."""

    @property
    def id(self) -> str: ...

    @property
    def _state(self) -> _Checks: ...

    @property
    def _store(self) -> _Host: ...

    def _append_event(
        self,
        event: EventBody,
        key: str,
        payloads: Sequence[tuple[str, bytes]] = (),
        check: Callable[[], Any] | None = None,
        placement: Placement | None = None,
    ) -> int: ...


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
    return run._append_event(
        event,
        key or f"artifact:{label}",
        (),
        lambda: run._state.check_artifact(label, staged.sha256),
        Placement(files, staged),
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
    """Capture, merge with ``facts``, digest, append ``manifest-recorded``, then place manifest.json."""
    if isinstance(packages, str):
        raise InvalidRequest("packages is a list of distribution names, not one string")
    try:
        packages = [check_text(p, "a package name") for p in packages]
    except TypeError:
        raise InvalidRequest(f"packages is a list of distribution names, not {shown(packages)}") from None
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
    staged = files.stage(manifest_file_bytes(run.id, manifest), path)
    seq = run._append_event(
        event,
        key or "manifest",
        (),
        lambda: run._state.check_manifest(manifest.digest),
        Placement(files, staged),
    )
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
