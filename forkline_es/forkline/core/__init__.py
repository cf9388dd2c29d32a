"""``forkline.core``: Forkline's record types, canonical bytes, redaction, tool calls, replay guards.

Not yet here (issue 26's replay half): ``diff_runs``, ``find_first_divergence`` and its
types, ``json_diff``, ``ReplayEngine`` and the replay result types, ``deep_compare``,
``compare_events``, ``compare_steps``.
"""

from forkline_es.forkline.core.canon import bytes_preview, canon, sha256_hex
from forkline_es.forkline.core.redaction import (
    RedactionAction,
    RedactionConfig,
    RedactionPolicy,
    RedactionRule,
    RegexRedactionRule,
    create_default_policy,
    load_redaction_config,
)
from forkline_es.forkline.core.replay import (
    DeterminismViolationError,
    MissingArtifactError,
    ReplayError,
    ReplayOrderError,
    assert_not_in_replay_mode,
    get_replay_run_id,
    guard_live_call,
    is_replay_mode_active,
    replay_mode,
)
from forkline_es.forkline.core.tool_call import (
    ToolCallPayload,
    ToolCallRecorder,
    ToolCallTiming,
    record_tool_call,
)
from forkline_es.forkline.core.types import Event, Run, Step

__all__ = [
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
    "Step",
    "ToolCallPayload",
    "ToolCallRecorder",
    "ToolCallTiming",
    "assert_not_in_replay_mode",
    "bytes_preview",
    "canon",
    "create_default_policy",
    "get_replay_run_id",
    "guard_live_call",
    "is_replay_mode_active",
    "load_redaction_config",
    "record_tool_call",
    "replay_mode",
    "sha256_hex",
]
