"""Forkline 0.5.0's public API on the forkline_es engine.

Replace ``forkline`` by ``forkline_es.forkline`` in imports: ``RunRecorder``,
``SQLiteStore`` and ``Tracer`` record runs of the engine (one log; the same documents,
retention, diff and verify as every other run), and the modules mirror Forkline's layout
(``.storage.recorder``, ``.storage.store``, ``.core.*``, ``.tracer``, ``.artifact``,
``.version``). docs/forkline.md is the migration guide and lists every difference.
"""

from forkline_es.forkline.artifact import ArtifactEvent, RunArtifact, SchemaVersionError, migrate_artifact
from forkline_es.forkline.core import (
    DeterminismViolationError,
    Event,
    MissingArtifactError,
    RedactionAction,
    RedactionConfig,
    RedactionPolicy,
    RedactionRule,
    RegexRedactionRule,
    ReplayError,
    ReplayOrderError,
    Run,
    Step,
    ToolCallPayload,
    ToolCallRecorder,
    ToolCallTiming,
    assert_not_in_replay_mode,
    canon,
    create_default_policy,
    get_replay_run_id,
    guard_live_call,
    is_replay_mode_active,
    load_redaction_config,
    record_tool_call,
    replay_mode,
    sha256_hex,
)
from forkline_es.forkline.storage import RunRecorder, SQLiteStore
from forkline_es.forkline.tracer import Tracer
from forkline_es.forkline.version import (
    DEFAULT_FORKLINE_VERSION,
    DEFAULT_SCHEMA_VERSION,
    FORKLINE_VERSION,
    SCHEMA_VERSION,
)

__all__ = [
    "DEFAULT_FORKLINE_VERSION",
    "DEFAULT_SCHEMA_VERSION",
    "FORKLINE_VERSION",
    "SCHEMA_VERSION",
    "ArtifactEvent",
    "DeterminismViolationError",
    "Event",
    "MissingArtifactError",
    "RedactionAction",
    "RedactionConfig",
    "RedactionPolicy",
    "RedactionRule",
    "RegexRedactionRule",
    "ReplayError",
    "ReplayOrderError",
    "Run",
    "RunArtifact",
    "RunRecorder",
    "SQLiteStore",
    "SchemaVersionError",
    "Step",
    "ToolCallPayload",
    "ToolCallRecorder",
    "ToolCallTiming",
    "Tracer",
    "assert_not_in_replay_mode",
    "canon",
    "create_default_policy",
    "get_replay_run_id",
    "guard_live_call",
    "is_replay_mode_active",
    "load_redaction_config",
    "migrate_artifact",
    "record_tool_call",
    "replay_mode",
    "sha256_hex",
]
