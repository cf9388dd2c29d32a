"""Forkline's coarse run diff: step counts, step names and per-step event counts, as notes."""

from __future__ import annotations

from dataclasses import dataclass

from forkline_es.forkline.core.types import Run

__all__ = ["DiffResult", "diff_runs"]


@dataclass(frozen=True)
class DiffResult:
    same: bool
    notes: list[str]


def diff_runs(left: Run, right: Run) -> DiffResult:
    """``step_count_mismatch``, ``step_name_mismatch:a:b``, ``event_count_mismatch:<step_id>``
    notes over the steps both runs have; ``same`` when there are none."""
    notes = [] if len(left.steps) == len(right.steps) else ["step_count_mismatch"]
    for a, b in zip(left.steps, right.steps, strict=False):
        if a.name != b.name:
            notes.append(f"step_name_mismatch:{a.name}:{b.name}")
        if len(a.events) != len(b.events):
            notes.append(f"event_count_mismatch:{a.step_id}")
    return DiffResult(same=not notes, notes=notes)
