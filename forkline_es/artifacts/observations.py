"""Observations (metrics) of runs: checking a value, folding events, and exact aggregates.

Pure functions only; their SQL lives in ``artifacts.sql``. The projection stores every
observation (one row per run, name and step) and aggregates at read time from the sorted
values, so a rebuild reproduces the figures exactly and the order events were folded in
cannot change a mean by a rounding step:

- ``count``: number of observations;
- ``mean``: the exact rational mean (``fractions.Fraction``), rounded once to a float,
  so no summation order or intermediate rounding can change it;
- ``min``, ``max``: of the values as recorded (an int stays an int);
- ``p50``, ``p95``: nearest rank on the ascending values: the value at 1-based rank
  ``ceil(q * count)`` (in integer arithmetic), always one of the recorded values, never an interpolation.

A metric never measured has no row and no aggregate (``None``), never a zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from forkline_es.errors import InvalidValue
from forkline_es.log.events import Observed
from forkline_es.log.rows import RowHeader

__all__ = ["MetricSummary", "ObservationRow", "aggregate", "check_metric", "fold_observation", "nearest_rank"]

_INT64: Final = (-(2**63), 2**63 - 1)

Number = int | float


def check_metric(value: object, name: str) -> Number:
    """A metric is a finite int (64-bit) or float; bool, NaN and the infinities are refused."""
    if type(value) is float:
        if not math.isfinite(value):
            raise InvalidValue(f"metric {name!r} must be finite, not {value!r}", "$.value")
        return value
    if type(value) is int:
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidValue(f"metric {name!r} is outside the 64-bit integer range", "$.value")
        return value
    raise InvalidValue(
        f"metric {name!r} must be a finite int or float, not {type(value).__name__}", "$.value"
    )


@dataclass(frozen=True, slots=True)
class ObservationRow:
    """One stored observation, as the projection keeps it."""

    run_id: str
    seq: int
    name: str
    value: Number
    unit: str | None
    step: str | None


def fold_observation(row: RowHeader, event: Observed) -> ObservationRow:
    """The projection row of one ``observed`` event."""
    return ObservationRow(row.run_id, row.seq, event.name, event.value, event.unit, event.step)


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """Aggregates of one metric over a workflow's runs (see the module doc for definitions)."""

    workflow: str
    name: str
    count: int
    runs: int
    mean: float
    min: Number
    max: Number
    p50: Number
    p95: Number
    units: tuple[str, ...]


def nearest_rank(ordered: Sequence[Number], percent: int) -> Number:
    """The ``percent`` percentile of ascending ``ordered`` values by nearest rank.

    The rank ``ceil(percent * n / 100)`` is computed in integers: ``0.95 * n`` in floats
    can land a hair above an integer and pick the next value.
    """
    rank = max(1, -(-percent * len(ordered) // 100))
    return ordered[rank - 1]


def aggregate(
    workflow: str, name: str, values: Sequence[Number], runs: int, units: Sequence[str]
) -> MetricSummary | None:
    """Aggregates of ``values``; None when there is none (never measured is not zero)."""
    if not values:
        return None
    ordered = sorted(values)
    return MetricSummary(
        workflow=workflow,
        name=name,
        count=len(ordered),
        runs=runs,
        mean=float(sum(map(Fraction, ordered), Fraction(0)) / len(ordered)),
        min=ordered[0],
        max=ordered[-1],
        p50=nearest_rank(ordered, 50),
        p95=nearest_rank(ordered, 95),
        units=tuple(sorted(set(units))),
    )
