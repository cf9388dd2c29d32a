"""``forkline.core.replay``: the replay engine, its policy and results, comparison helpers,
replay mode guards and replay exceptions, under Forkline 0.5.0's names.

Runs come from ``SQLiteStore.load_run`` (one snapshot of the engine's log); comparing only
reads. ``summary()``, ``to_dict()`` and the exception texts are Forkline's, word for word.
"""

from __future__ import annotations

from forkline_es.forkline.core._compare import compare_events, compare_steps, deep_compare
from forkline_es.forkline.core._engine import ReplayContext, ReplayEngine, replay
from forkline_es.forkline.core._errors import (
    DeterminismViolationError,
    MissingArtifactError,
    ReplayError,
    ReplayOrderError,
)
from forkline_es.forkline.core._guards import (
    assert_not_in_replay_mode,
    get_replay_run_id,
    guard_live_call,
    is_replay_mode_active,
    replay_mode,
)
from forkline_es.forkline.core._results import (
    Divergence,
    DivergencePoint,
    DivergenceReason,
    FieldDiff,
    ReplayPolicy,
    ReplayResult,
    ReplayStatus,
    ReplayStepResult,
)

__all__ = [
    "DeterminismViolationError",
    "Divergence",
    "DivergencePoint",
    "DivergenceReason",
    "FieldDiff",
    "MissingArtifactError",
    "ReplayContext",
    "ReplayEngine",
    "ReplayError",
    "ReplayOrderError",
    "ReplayPolicy",
    "ReplayResult",
    "ReplayStatus",
    "ReplayStepResult",
    "assert_not_in_replay_mode",
    "compare_events",
    "compare_steps",
    "deep_compare",
    "get_replay_run_id",
    "guard_live_call",
    "is_replay_mode_active",
    "replay",
    "replay_mode",
]
