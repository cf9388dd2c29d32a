"""The projectors of artifacts, manifests and observations (registered in projections.registry).

Each folds only its own event kind, in the append's transaction; the row it writes is
a pure function of the event and its log row (``observations.fold_observation``), the
SQL is in ``artifacts.sql``.
"""

from __future__ import annotations

from forkline_es.artifacts import sql
from forkline_es.artifacts.observations import fold_observation
from forkline_es.log.backend import Cursor
from forkline_es.log.events import ArtifactAdded, EventBody, ManifestRecorded, Observed
from forkline_es.log.rows import RowHeader

__all__ = ["ArtifactProjector", "ManifestProjector", "ObservationProjector", "projectors"]


class ArtifactProjector:
    """run_id, name -> the artifact's pointer and checksum (``x-artifacts``)."""

    name: str = "artifacts"
    version: int = 1
    events: tuple[type[EventBody], ...] = (ArtifactAdded,)
    ddl: str = sql.ARTIFACT_DDL
    tables: tuple[str, ...] = ("artifact",)

    def apply(self, cur: Cursor, row: RowHeader, event: EventBody) -> None:
        if isinstance(event, ArtifactAdded):
            sql.insert_artifact(cur, row, event)


class ManifestProjector:
    """run_id -> the manifest digest the run cites (``x-manifest``)."""

    name: str = "manifests"
    version: int = 1
    events: tuple[type[EventBody], ...] = (ManifestRecorded,)
    ddl: str = sql.MANIFEST_DDL
    tables: tuple[str, ...] = ("manifest",)

    def apply(self, cur: Cursor, row: RowHeader, event: EventBody) -> None:
        if isinstance(event, ManifestRecorded):
            sql.save_manifest(cur, row, event)


class ObservationProjector:
    """Every observation; per-workflow aggregates are computed from these rows at read."""

    name: str = "observations"
    version: int = 2  # 2: keyed by (run_id, seq), no log position
    events: tuple[type[EventBody], ...] = (Observed,)
    ddl: str = sql.OBSERVATION_DDL
    tables: tuple[str, ...] = ("observation",)

    def apply(self, cur: Cursor, row: RowHeader, event: EventBody) -> None:
        if isinstance(event, Observed):
            sql.insert_observation(cur, fold_observation(row, event))


def projectors() -> list[ArtifactProjector | ManifestProjector | ObservationProjector]:
    return [ArtifactProjector(), ManifestProjector(), ObservationProjector()]
