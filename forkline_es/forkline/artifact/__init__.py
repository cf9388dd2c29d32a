"""``forkline.artifact``: the versioned run artifact and its migrations."""

from forkline_es.forkline.artifact.migrate import migrate_artifact, register_migration
from forkline_es.forkline.artifact.schema import ArtifactEvent, RunArtifact, SchemaVersionError

__all__ = ["ArtifactEvent", "RunArtifact", "SchemaVersionError", "migrate_artifact", "register_migration"]
