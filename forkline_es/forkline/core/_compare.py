"""Forkline's semantic comparison of values, events and steps, as lists of ``FieldDiff``.

Paths read ``payload.a.b[2]``; a length difference is reported at ``<path>.(length)`` and the
common items are still compared; a change of Python type is one diff ``type:<name>``. A step
comparison stops at its first difference (name, then event count, then each event).
"""

from __future__ import annotations

from typing import Any, Final

from forkline_es.forkline.core._results import DivergencePoint, FieldDiff
from forkline_es.forkline.core.types import Event, Step

__all__ = ["compare_events", "compare_steps", "deep_compare"]

#: Payload fields that are clocks, left out unless timestamps are compared.
TIMESTAMP_FIELDS: Final = frozenset({"created_at", "ts", "timestamp"})


def deep_compare(
    expected: Any, actual: Any, path: str = "", ignore_fields: set[str] | frozenset[str] | None = None
) -> list[FieldDiff]:
    """Every difference between ``expected`` and ``actual`` (map keys in ``ignore_fields``
    skipped at any depth); empty when they are equal."""
    diffs: list[FieldDiff] = []
    _walk(expected, actual, path, ignore_fields or frozenset(), diffs)
    return diffs


def _walk(
    expected: Any, actual: Any, path: str, ignore: set[str] | frozenset[str], out: list[FieldDiff]
) -> None:
    here = path or "(root)"
    if type(expected) is not type(actual):
        out.append(FieldDiff(here, f"type:{type(expected).__name__}", f"type:{type(actual).__name__}"))
    elif isinstance(expected, dict):
        for key in sorted(expected.keys() | actual.keys()):
            if key in ignore:
                continue
            child = f"{path}.{key}" if path else key
            if key not in expected:
                out.append(FieldDiff(child, "<missing>", actual[key]))
            elif key not in actual:
                out.append(FieldDiff(child, expected[key], "<missing>"))
            else:
                _walk(expected[key], actual[key], child, ignore, out)
    elif isinstance(expected, list):
        if len(expected) != len(actual):
            out.append(FieldDiff(f"{path}.(length)" if path else "(length)", len(expected), len(actual)))
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _walk(e, a, f"{path}[{i}]", ignore, out)
    elif expected != actual:
        out.append(FieldDiff(here, expected, actual))


def compare_events(expected: Event, actual: Event, ignore_timestamps: bool = True) -> list[FieldDiff]:
    """The event's type, then its payload (clock fields left out by default)."""
    diffs = [] if expected.type == actual.type else [FieldDiff("type", expected.type, actual.type)]
    ignore = TIMESTAMP_FIELDS if ignore_timestamps else frozenset()
    return diffs + deep_compare(expected.payload, actual.payload, "payload", ignore)


def compare_steps(
    expected: Step, actual: Step, ignore_timestamps: bool = True
) -> tuple[bool, DivergencePoint | None]:
    """``(True, None)``, or ``(False, the first divergence)``: name, event count, then events."""
    if expected.name != actual.name:
        return False, DivergencePoint(
            expected.idx,
            expected.name,
            None,
            "step_name_mismatch",
            [FieldDiff("name", expected.name, actual.name)],
        )
    if len(expected.events) != len(actual.events):
        return False, DivergencePoint(
            expected.idx,
            expected.name,
            None,
            "event_count_mismatch",
            [FieldDiff("events.(length)", len(expected.events), len(actual.events))],
            {
                "expected_event_types": [e.type for e in expected.events],
                "actual_event_types": [e.type for e in actual.events],
            },
        )
    for i, (e, a) in enumerate(zip(expected.events, actual.events, strict=True)):
        diffs = compare_events(e, a, ignore_timestamps)
        if diffs:
            return False, DivergencePoint(
                expected.idx,
                expected.name,
                i,
                "event_payload_mismatch",
                diffs,
                {"expected_event_type": e.type, "actual_event_type": a.type},
            )
    return True, None
