"""Forkline's replay exceptions, with its constructor arguments and messages.

They stay outside ``forkline_es.errors``' refusal hierarchy on purpose: none is a refused
call (nothing was asked of the log), and Forkline's callers catch them by these names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DeterminismViolationError", "MissingArtifactError", "ReplayError", "ReplayOrderError"]


class ReplayError(Exception):
    """The root of Forkline's replay exceptions."""


class MissingArtifactError(ReplayError):
    """Replay needed something the recording does not hold (a step, an event, a payload)."""

    def __init__(
        self,
        message: str,
        run_id: str,
        step_idx: int | None = None,
        event_idx: int | None = None,
        artifact_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.step_idx = step_idx
        self.event_idx = event_idx
        self.artifact_type = artifact_type

    def __str__(self) -> str:
        where = [f"run={self.run_id}"]
        if self.step_idx is not None:
            where.append(f"step={self.step_idx}")
        if self.event_idx is not None:
            where.append(f"event={self.event_idx}")
        if self.artifact_type:
            where.append(f"type={self.artifact_type}")
        return f"MissingArtifactError({', '.join(where)}): {self.args[0]}"


class DeterminismViolationError(ReplayError):
    """Replay saw something a deterministic run cannot do: a live call, a different output."""

    def __init__(
        self,
        message: str,
        step_idx: int,
        expected: Any,
        actual: Any,
        violation_type: str = "output_mismatch",
    ) -> None:
        super().__init__(message)
        self.step_idx = step_idx
        self.expected = expected
        self.actual = actual
        self.violation_type = violation_type

    def __str__(self) -> str:
        return f"DeterminismViolationError at step {self.step_idx} [{self.violation_type}]: {self.args[0]}"


class ReplayOrderError(Exception):
    """Recorded events were asked for out of their recorded order (not a ``ReplayError``, as in Forkline)."""
