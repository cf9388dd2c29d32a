"""Forkline's first-divergence diff: where two step-store runs part, classified and explained.

Steps are walked in lockstep. At the first pair that differs, a resync is tried within
``window`` steps on each side by a soft signature (step name and the hash of its ``input``
events): a match that skips steps on one side only is ``missing_steps`` or ``extra_steps``;
otherwise the pair is classified by what differs first, in this order: the operation (name),
the input, the error state, the output (``output`` events, then every event). Results, their
``to_dict`` and the explanations are Forkline 0.5.0's, word for word, since CI scripts parse
them. Pure functions over loaded ``Run``s: ``SQLiteStore.load_run`` reads them from the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from forkline_es.forkline.core.canon import canon, sha256_hex
from forkline_es.forkline.core.json_diff import json_diff
from forkline_es.forkline.core.types import Run, Step

__all__ = ["DivergenceType", "FirstDivergenceResult", "StepSummary", "find_first_divergence"]


class DivergenceType:
    """The classes of a first divergence (plain strings, as Forkline compares them)."""

    EXACT_MATCH: Final = "exact_match"
    INPUT_DIVERGENCE: Final = "input_divergence"
    OUTPUT_DIVERGENCE: Final = "output_divergence"
    OP_DIVERGENCE: Final = "op_divergence"
    MISSING_STEPS: Final = "missing_steps"
    EXTRA_STEPS: Final = "extra_steps"
    ERROR_DIVERGENCE: Final = "error_divergence"


@dataclass(frozen=True)
class StepSummary:
    """A step in a divergence report: its index, name, input/output hashes, events, error."""

    idx: int
    name: str
    input_hash: str
    output_hash: str
    event_count: int
    has_error: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "idx": self.idx,
            "name": self.name,
            "input_hash": self.input_hash,
            "output_hash": self.output_hash,
            "event_count": self.event_count,
            "has_error": self.has_error,
        }


@dataclass(frozen=True)
class FirstDivergenceResult:
    """The first divergence (``status`` a ``DivergenceType``), with context on both sides."""

    status: str
    idx_a: int | None
    idx_b: int | None
    explanation: str
    old_step: StepSummary | None
    new_step: StepSummary | None
    input_diff: list[dict[str, Any]] | None
    output_diff: list[dict[str, Any]] | None
    last_equal_idx: int
    context_a: list[StepSummary]
    context_b: list[StepSummary]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "idx_a": self.idx_a,
            "idx_b": self.idx_b,
            "explanation": self.explanation,
            "last_equal_idx": self.last_equal_idx,
            "old_step": None if self.old_step is None else self.old_step.to_dict(),
            "new_step": None if self.new_step is None else self.new_step.to_dict(),
            "input_diff": self.input_diff,
            "output_diff": self.output_diff,
            "context_a": [s.to_dict() for s in self.context_a],
            "context_b": [s.to_dict() for s in self.context_b],
        }


def _payloads(step: Step, event_type: str) -> list[Any]:
    return [e.payload for e in step.events if e.type == event_type]


def _hash(step: Step, event_type: str) -> str:
    return sha256_hex(canon(_payloads(step, event_type)))


def _has_error(step: Step) -> bool:
    return any(e.type == "error" for e in step.events)


def _signature(step: Step) -> tuple[str, str]:
    return step.name, _hash(step, "input")


def _summary(step: Step) -> StepSummary:
    return StepSummary(
        idx=step.idx,
        name=step.name,
        input_hash=_hash(step, "input"),
        output_hash=_hash(step, "output"),
        event_count=len(step.events),
        has_error=_has_error(step),
    )


def _context(steps: list[Step], center: int, size: int) -> list[StepSummary]:
    return [_summary(s) for s in steps[max(0, center - size) : center + size + 1]]


def _classify(a: Step, b: Step) -> str:
    """What differs first between two steps at the same position (``exact_match`` if nothing)."""
    if a.name != b.name:
        return DivergenceType.OP_DIVERGENCE
    if _hash(a, "input") != _hash(b, "input"):
        return DivergenceType.INPUT_DIVERGENCE
    error_a, error_b = _has_error(a), _has_error(b)
    if error_a != error_b or (error_a and canon(_payloads(a, "error")) != canon(_payloads(b, "error"))):
        return DivergenceType.ERROR_DIVERGENCE
    if _hash(a, "output") != _hash(b, "output"):
        return DivergenceType.OUTPUT_DIVERGENCE
    if canon([(e.type, e.payload) for e in a.events]) != canon([(e.type, e.payload) for e in b.events]):
        return DivergenceType.OUTPUT_DIVERGENCE  # a tool call or any other event differs
    return DivergenceType.EXACT_MATCH


def _resync(steps_a: list[Step], steps_b: list[Step], start: int, window: int) -> tuple[int, int] | None:
    """The nearest pair of positions (by combined offset from ``start``, then the smaller
    offset in run A) whose signatures agree, each offset below ``window``; None if none."""
    for distance in range(1, 2 * window + 1):
        for offset_a in range(min(distance + 1, window)):
            offset_b = distance - offset_a
            ia, ib = start + offset_a, start + offset_b
            if (
                offset_b < window
                and ia < len(steps_a)
                and ib < len(steps_b)
                and _signature(steps_a[ia]) == _signature(steps_b[ib])
            ):
                return ia, ib
    return None


def _span(first: int, gap: int) -> str:
    return f"Steps {first}..{first + gap - 1}" if gap > 1 else f"Step {first}"


def _explain(
    status: str, a: Step | None, b: Step | None, idx_a: int | None, idx_b: int | None, gap: int
) -> str:
    name_a = a.name if a is not None else "?"
    if status == DivergenceType.OP_DIVERGENCE:
        name_b = b.name if b is not None else "?"
        return f"Step {idx_a}: operation mismatch ('{name_a}' vs '{name_b}')"
    if status == DivergenceType.INPUT_DIVERGENCE:
        return f"Step {idx_a} '{name_a}': input differs"
    if status == DivergenceType.OUTPUT_DIVERGENCE:
        return f"Step {idx_a} '{name_a}': output differs (same input)"
    if status == DivergenceType.ERROR_DIVERGENCE:
        return f"Step {idx_a} '{name_a}': error state differs"
    if status == DivergenceType.MISSING_STEPS:
        return f"{_span(idx_a or 0, gap)} from run_a missing in run_b"
    return f"{_span(idx_b or 0, gap)} in run_b not present in run_a"


def find_first_divergence(
    run_a: Run, run_b: Run, *, window: int = 10, context_size: int = 2, show: str = "both"
) -> FirstDivergenceResult:
    """The first divergence of ``run_b`` (the new run) from ``run_a`` (the baseline).

    ``window``: how far (in steps, each side) a resync is looked for; ``context_size``: the
    steps around the divergence in ``context_a``/``context_b``; ``show``: which JSON diffs
    (``"input"``, ``"output"`` or ``"both"``) an input or output divergence carries.
    """
    steps_a, steps_b = run_a.steps, run_b.steps
    last_equal = -1
    for i, (a, b) in enumerate(zip(steps_a, steps_b, strict=False)):
        status = _classify(a, b)
        if status == DivergenceType.EXACT_MATCH:
            last_equal = i
            continue
        gap_a = gap_b = 0
        found = _resync(steps_a, steps_b, i, window)
        if found is not None:
            gap_a, gap_b = found[0] - i, found[1] - i
        if (gap_a > 0) != (gap_b > 0):  # steps skipped on one side only
            status = DivergenceType.MISSING_STEPS if gap_a else DivergenceType.EXTRA_STEPS
            input_diff = output_diff = None
        else:  # no resync, or steps replaced on both sides: what differs here
            input_diff = output_diff = None
            if status == DivergenceType.INPUT_DIVERGENCE and show in ("input", "both"):
                input_diff = json_diff(_payloads(a, "input"), _payloads(b, "input"))
            if status == DivergenceType.OUTPUT_DIVERGENCE and show in ("output", "both"):
                output_diff = json_diff(_payloads(a, "output"), _payloads(b, "output"))
        return FirstDivergenceResult(
            status=status,
            idx_a=i,
            idx_b=i,
            explanation=_explain(status, a, b, i, i, max(gap_a, gap_b)),
            old_step=_summary(a),
            new_step=_summary(b),
            input_diff=input_diff,
            output_diff=output_diff,
            last_equal_idx=last_equal,
            context_a=_context(steps_a, i, context_size),
            context_b=_context(steps_b, i, context_size),
        )
    shorter, longer = sorted((len(steps_a), len(steps_b)))
    if shorter == longer:
        return FirstDivergenceResult(
            status=DivergenceType.EXACT_MATCH,
            idx_a=None,
            idx_b=None,
            explanation=f"Runs are identical ({len(steps_a)} steps compared)",
            old_step=None,
            new_step=None,
            input_diff=None,
            output_diff=None,
            last_equal_idx=last_equal,
            context_a=[],
            context_b=[],
        )
    a_longer = len(steps_a) > len(steps_b)
    status = DivergenceType.MISSING_STEPS if a_longer else DivergenceType.EXTRA_STEPS
    idx = shorter
    extra = steps_a[idx] if a_longer else steps_b[idx]
    return FirstDivergenceResult(
        status=status,
        idx_a=idx if a_longer else None,
        idx_b=None if a_longer else idx,
        explanation=_explain(status, extra, None, idx, idx, longer - shorter),
        old_step=_summary(extra) if a_longer else None,
        new_step=None if a_longer else _summary(extra),
        input_diff=None,
        output_diff=None,
        last_equal_idx=last_equal,
        context_a=_context(steps_a, idx if a_longer else len(steps_a) - 1, context_size),
        context_b=_context(steps_b, len(steps_b) - 1 if a_longer else idx, context_size),
    )
