"""Forkline's CI exit codes (stable across its releases, so pipelines can branch on them)."""

from __future__ import annotations

from typing import Final

__all__ = [
    "EXIT_ARTIFACT_ERROR",
    "EXIT_CODE_DESCRIPTIONS",
    "EXIT_DIFF_DETECTED",
    "EXIT_INTERNAL_ERROR",
    "EXIT_OFFLINE_VIOLATION",
    "EXIT_REPLAY_FAILED",
    "EXIT_SUCCESS",
    "EXIT_USAGE_ERROR",
]

EXIT_SUCCESS: Final = 0
EXIT_DIFF_DETECTED: Final = 1
EXIT_USAGE_ERROR: Final = 2
EXIT_REPLAY_FAILED: Final = 3
EXIT_OFFLINE_VIOLATION: Final = 4
EXIT_ARTIFACT_ERROR: Final = 5
EXIT_INTERNAL_ERROR: Final = 6

EXIT_CODE_DESCRIPTIONS: Final = {
    EXIT_SUCCESS: "Success, no diff / replay ok",
    EXIT_DIFF_DETECTED: "Diff detected (policy violation; should fail CI)",
    EXIT_USAGE_ERROR: "Usage/config error (bad args, missing file)",
    EXIT_REPLAY_FAILED: "Replay failed (runtime exception, missing dependencies)",
    EXIT_OFFLINE_VIOLATION: "Offline violation (network attempted in offline mode)",
    EXIT_ARTIFACT_ERROR: "Artifact/schema error (cannot parse, unsupported version)",
    EXIT_INTERNAL_ERROR: "Internal error (unexpected bug)",
}
