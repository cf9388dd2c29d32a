"""``forkline.core.replay``: replay mode guards and replay exceptions.

The replay engine itself (``ReplayEngine``, ``ReplayPolicy``, the result types) is the
second half of issue 26 and lands here on top of ``forkline_es.replay``.
"""

from __future__ import annotations

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

__all__ = [
    "DeterminismViolationError",
    "MissingArtifactError",
    "ReplayError",
    "ReplayOrderError",
    "assert_not_in_replay_mode",
    "get_replay_run_id",
    "guard_live_call",
    "is_replay_mode_active",
    "replay_mode",
]
