"""The SQL of the artifact, manifest and observation projections: DDL, writes and reads.

Each table has a ``run_id`` column, so a run's rows can be found (and dropped with the
run); each is rebuilt from the log by ``store.rebuild_projections()``.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from forkline_es.artifacts.observations import MetricSummary, ObservationRow, aggregate
from forkline_es.log.backend import Cursor
from forkline_es.log.events import ArtifactAdded, ManifestRecorded
from forkline_es.log.rows import RowHeader

__all__ = [
    "ARTIFACT_DDL",
    "MANIFEST_DDL",
    "OBSERVATION_DDL",
    "insert_artifact",
    "insert_observation",
    "metric_summary",
    "read_artifacts",
    "read_manifest",
    "read_observations",
    "save_manifest",
]

ARTIFACT_DDL: Final = """
CREATE TABLE IF NOT EXISTS artifact (
    run_id       TEXT NOT NULL,
    name         TEXT NOT NULL,
    seq          INTEGER NOT NULL,        -- the artifact-added event
    path         TEXT NOT NULL,           -- relative to <db>.artifacts/
    sha256       TEXT NOT NULL,
    size_bytes   INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    content_type TEXT,
    step         TEXT,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS artifact_by_sha256 ON artifact (sha256);
"""

MANIFEST_DDL: Final = """
CREATE TABLE IF NOT EXISTS manifest (
    run_id         TEXT PRIMARY KEY,
    seq            INTEGER NOT NULL,      -- the manifest-recorded event
    digest         TEXT NOT NULL,
    complete       INTEGER NOT NULL,
    unknown_fields TEXT NOT NULL,         -- JSON list
    path           TEXT                   -- manifest.json, relative to <db>.artifacts/
) WITHOUT ROWID;
"""

OBSERVATION_DDL: Final = """
CREATE TABLE IF NOT EXISTS observation (
    run_id   TEXT NOT NULL,
    seq      INTEGER NOT NULL,            -- the observed event (no log position: folds run before it has one)
    name     TEXT NOT NULL,
    value    NOT NULL,                    -- no declared type: 3.0 stays REAL, 3 stays INTEGER
    unit     TEXT,
    step     TEXT,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS observation_by_name ON observation (name, run_id);
"""

_list: Final = msgspec.json.Decoder(list[str])


def insert_artifact(cur: Cursor, row: RowHeader, e: ArtifactAdded) -> None:
    cur.execute(
        "INSERT INTO artifact (run_id, name, seq, path, sha256, size_bytes, kind, content_type, step) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, name) DO UPDATE SET "
        "seq = excluded.seq, path = excluded.path, sha256 = excluded.sha256, "
        "size_bytes = excluded.size_bytes, kind = excluded.kind, "
        "content_type = excluded.content_type, step = excluded.step",
        (row.run_id, e.name, row.seq, e.path, e.sha256, e.size_bytes, e.kind, e.content_type, e.step),
    )


def save_manifest(cur: Cursor, row: RowHeader, e: ManifestRecorded) -> None:
    cur.execute(
        "INSERT INTO manifest (run_id, seq, digest, complete, unknown_fields, path) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, "
        "digest = excluded.digest, complete = excluded.complete, "
        "unknown_fields = excluded.unknown_fields, path = excluded.path",
        (
            row.run_id,
            row.seq,
            e.digest,
            int(e.complete),
            msgspec.json.encode(e.unknown_fields).decode(),
            e.path,
        ),
    )


def insert_observation(cur: Cursor, o: ObservationRow) -> None:
    cur.execute(
        "INSERT INTO observation (run_id, seq, name, value, unit, step) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO UPDATE SET "
        "name = excluded.name, value = excluded.value, unit = excluded.unit, step = excluded.step",
        (o.run_id, o.seq, o.name, o.value, o.unit, o.step),
    )


# -- reads: the document's x- extensions and the metrics -----------------------------------


def read_artifacts(cur: Cursor, run_id: str) -> list[dict[str, Any]] | None:
    """``x-artifacts``: the run's artifacts in the order they were added; None when none."""
    out: list[dict[str, Any]] = []
    for name, path, sha256, size, kind, content_type, step in cur.execute(
        "SELECT name, path, sha256, size_bytes, kind, content_type, step FROM artifact "
        "WHERE run_id = ? ORDER BY seq",
        (run_id,),
    ):
        item: dict[str, Any] = {
            "name": name,
            "path": path,
            "sha256": sha256,
            "size_bytes": size,
            "kind": kind,
        }
        if content_type is not None:
            item["content_type"] = content_type
        if step is not None:
            item["step"] = step
        out.append(item)
    return out or None


def read_manifest(cur: Cursor, run_id: str) -> dict[str, Any] | None:
    """``x-manifest``: the digest the run cites, its completeness and unknown fields."""
    rows = cur.execute(
        "SELECT digest, complete, unknown_fields, path FROM manifest WHERE run_id = ?", (run_id,)
    ).fetchall()
    if not rows:
        return None
    digest, complete, unknown, path = rows[0]
    out: dict[str, Any] = {
        "digest": digest,
        "complete": bool(complete),
        "unknown_fields": _list.decode(unknown),
    }
    if path is not None:
        out["path"] = path
    return out


def read_observations(cur: Cursor, run_id: str) -> list[dict[str, Any]] | None:
    """``x-observations``: the run's metrics in recording order; None when none."""
    out: list[dict[str, Any]] = []
    for name, value, unit, step in cur.execute(
        "SELECT name, value, unit, step FROM observation WHERE run_id = ? ORDER BY seq", (run_id,)
    ):
        item: dict[str, Any] = {"name": name, "value": value}
        if unit is not None:
            item["unit"] = unit
        if step is not None:
            item["step"] = step
        out.append(item)
    return out or None


def metric_summary(cur: Cursor, workflow: str, name: str) -> MetricSummary | None:
    """Aggregates of metric ``name`` over the runs of ``workflow`` (None if never measured)."""
    values: list[int | float] = []
    units: list[str] = []
    runs: set[str] = set()
    for run_id, value, unit in cur.execute(
        "SELECT o.run_id, o.value, o.unit FROM observation AS o JOIN run_summary AS s ON s.run_id = o.run_id "
        "WHERE s.workflow = ? AND o.name = ?",
        (workflow, name),
    ):
        values.append(value)
        runs.add(run_id)
        if unit is not None:
            units.append(unit)
    return aggregate(workflow, name, values, len(runs), units)
