"""Forkline's replay data: the policy, the status, and the result types with their words.

``summary()`` and ``to_dict()`` give Forkline 0.5.0's text and keys exactly: CI scripts and
golden files read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

__all__ = [
    "Divergence",
    "DivergencePoint",
    "DivergenceReason",
    "FieldDiff",
    "ReplayPolicy",
    "ReplayResult",
    "ReplayStatus",
    "ReplayStepResult",
]


class DivergenceReason(Enum):
    """Why a replay diverged, in ``Divergence`` (the newer of Forkline's two formats)."""

    STEP_NAME_MISMATCH = "step_name_mismatch"
    STEP_COUNT_MISMATCH = "step_count_mismatch"
    EVENT_COUNT_MISMATCH = "event_count_mismatch"
    EVENT_TYPE_MISMATCH = "event_type_mismatch"
    EVENT_PAYLOAD_MISMATCH = "event_payload_mismatch"
    TOOL_OUTPUT_MISMATCH = "tool_output_mismatch"
    LLM_OUTPUT_MISMATCH = "llm_output_mismatch"
    EXTRA_STEPS = "extra_steps"
    MISSING_STEPS = "missing_steps"


@dataclass(frozen=True)
class ReplayPolicy:
    """What a replay compares and how it treats a recording with gaps."""

    ignore_timestamps: bool = True
    strict_event_order: bool = True
    fail_on_missing_artifact: bool = True
    compare_tool_outputs: bool = True
    compare_llm_outputs: bool = True

    @classmethod
    def default(cls) -> ReplayPolicy:
        return cls()

    @classmethod
    def strict(cls) -> ReplayPolicy:
        """Timestamps compared too."""
        return cls(ignore_timestamps=False)

    @classmethod
    def lenient(cls) -> ReplayPolicy:
        """A missing step, event or output is passed over rather than raised."""
        return cls(fail_on_missing_artifact=False)


class ReplayStatus(Enum):
    MATCH = "match"
    DIVERGED = "diverged"
    INCOMPLETE = "incomplete"
    ERROR = "error"
    ORIGINAL_NOT_FOUND = "original_not_found"
    REPLAY_NOT_FOUND = "replay_not_found"


def _shown(value: Any, width: int = 50) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass(frozen=True)
class FieldDiff:
    """One field that differs: its path (``payload.prompt``, ``events.(length)``) and both values."""

    path: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return f"{self.path}: expected {_shown(self.expected)}, got {_shown(self.actual)}"


def _diffs_text(diffs: list[FieldDiff]) -> str:
    text = "; ".join(str(d) for d in diffs[:3])
    return text + (f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else "")


def _where(step: int, name: str, event: int | None) -> str:
    return f"step[{step}]:{name}" + ("" if event is None else f"/event[{event}]")


@dataclass(frozen=True)
class Divergence:
    """Where two runs part, with an enumerated ``reason`` and both payloads."""

    step_index: int
    step_name: str
    reason: DivergenceReason
    expected: Any
    actual: Any
    diff: list[FieldDiff] = field(default_factory=list)
    event_index: int | None = None
    context: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        return f"[{self.reason.value}] at {_where(self.step_index, self.step_name, self.event_index)}: " + (
            _diffs_text(self.diff)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "step_index": self.step_index,
            "step_name": self.step_name,
            "event_index": self.event_index,
            "reason": self.reason.value,
            "expected": self.expected,
            "actual": self.actual,
            "diff": [{"path": d.path, "expected": d.expected, "actual": d.actual} for d in self.diff],
        }


#: DivergencePoint's string types that have their own reason; any other maps to a payload mismatch.
_REASONS: Final = {
    "step_name_mismatch": DivergenceReason.STEP_NAME_MISMATCH,
    "step_count_mismatch": DivergenceReason.STEP_COUNT_MISMATCH,
    "event_count_mismatch": DivergenceReason.EVENT_COUNT_MISMATCH,
    "event_payload_mismatch": DivergenceReason.EVENT_PAYLOAD_MISMATCH,
    "extra_steps_in_replay": DivergenceReason.EXTRA_STEPS,
}


@dataclass(frozen=True)
class DivergencePoint:
    """Where two runs part (the format ``ReplayResult.divergence`` holds): ``divergence_type``
    is ``step_name_mismatch``, ``event_count_mismatch``, ``event_payload_mismatch`` or
    ``extra_steps_in_replay``."""

    step_idx: int
    step_name: str
    event_idx: int | None
    divergence_type: str
    field_diffs: list[FieldDiff] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        where = _where(self.step_idx, self.step_name, self.event_idx)
        return f"[{self.divergence_type}] at {where}: {_diffs_text(self.field_diffs)}"

    def to_divergence(self) -> Divergence:
        first = self.field_diffs[0] if self.field_diffs else None
        return Divergence(
            step_index=self.step_idx,
            step_name=self.step_name,
            reason=_REASONS.get(self.divergence_type, DivergenceReason.EVENT_PAYLOAD_MISMATCH),
            expected=None if first is None else first.expected,
            actual=None if first is None else first.actual,
            diff=self.field_diffs,
            event_index=self.event_idx,
            context=self.context,
        )


@dataclass(frozen=True)
class ReplayStepResult:
    step_idx: int
    step_name: str
    events_compared: int
    matched: bool
    divergence: DivergencePoint | None = None


@dataclass(frozen=True)
class ReplayResult:
    """A replay's outcome: the status, where it diverged if it did, and each step compared."""

    original_run_id: str
    replay_run_id: str
    status: ReplayStatus
    steps_compared: int
    total_events_compared: int
    divergence: DivergencePoint | None = None
    step_results: list[ReplayStepResult] = field(default_factory=list)
    error_message: str | None = None

    def is_match(self) -> bool:
        return self.status is ReplayStatus.MATCH

    def is_diverged(self) -> bool:
        return self.status is ReplayStatus.DIVERGED

    def is_error(self) -> bool:
        return self.status is ReplayStatus.ERROR

    def get_divergence(self) -> Divergence | None:
        return None if self.divergence is None else self.divergence.to_divergence()

    def summary(self) -> str:
        if self.status is ReplayStatus.MATCH:
            return f"MATCH: {self.steps_compared} steps, {self.total_events_compared} events compared"
        if self.status is ReplayStatus.DIVERGED and self.divergence is not None:
            return f"DIVERGED: {self.divergence.summary()}"
        if self.status is ReplayStatus.INCOMPLETE:
            return "INCOMPLETE: replay has fewer steps than original"
        if self.status is ReplayStatus.ERROR:
            return f"ERROR: {self.error_message or 'unknown error'}"
        return str(self.status.value).upper()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "original_run_id": self.original_run_id,
            "replay_run_id": self.replay_run_id,
            "status": self.status.value,
            "steps_compared": self.steps_compared,
            "total_events_compared": self.total_events_compared,
        }
        if self.divergence is not None:
            out["divergence"] = self.divergence.to_divergence().to_dict()
        if self.error_message:
            out["error_message"] = self.error_message
        return out
