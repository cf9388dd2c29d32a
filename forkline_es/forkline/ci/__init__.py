"""``forkline.ci``: baselines, offline replays and build-failing diffs for CI pipelines.

Exit codes: 0 success, 1 diff detected, 2 usage error, 3 replay failed, 4 offline
violation, 5 artifact or schema error, 6 internal error.
"""

from forkline_es.forkline.ci.exitcodes import (
    EXIT_ARTIFACT_ERROR,
    EXIT_DIFF_DETECTED,
    EXIT_INTERNAL_ERROR,
    EXIT_OFFLINE_VIOLATION,
    EXIT_REPLAY_FAILED,
    EXIT_SUCCESS,
    EXIT_USAGE_ERROR,
)
from forkline_es.forkline.ci.normalize import normalize_artifact
from forkline_es.forkline.ci.offline import ForklineOfflineError, enable_offline_mode, offline_context

__all__ = [
    "EXIT_ARTIFACT_ERROR",
    "EXIT_DIFF_DETECTED",
    "EXIT_INTERNAL_ERROR",
    "EXIT_OFFLINE_VIOLATION",
    "EXIT_REPLAY_FAILED",
    "EXIT_SUCCESS",
    "EXIT_USAGE_ERROR",
    "ForklineOfflineError",
    "enable_offline_mode",
    "normalize_artifact",
    "offline_context",
]
