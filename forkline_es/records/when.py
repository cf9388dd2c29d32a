"""When, for a person: recorded times as short relative text that fits a terminal column.

A record keeps full canonical timestamps (``x-at``, ``started_at``, ...) and ``--json``
prints them as they are; a table on a terminal says "3m ago", "+1.2s" and "4m05s"
instead. Pure: timestamps (and the reader's clock, passed in) in, text out. A timestamp
that is absent or not canonical gives "" (nothing is invented).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from forkline_es.errors import InvalidValue
from forkline_es.values import parse_canonical_timestamp

__all__ = ["ago", "between", "duration", "elapsed", "offset", "seconds_between"]

#: (seconds in the unit, its suffix, seconds in the next smaller unit, its suffix)
_UNITS: Final = ((86_400, "d", 3_600, "h"), (3_600, "h", 60, "m"), (60, "m", 1, "s"))


def _instant(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return parse_canonical_timestamp(text)
    except InvalidValue:
        return None


def seconds_between(start: object, end: object) -> float | None:
    """``end - start`` in seconds, None when either is missing."""
    a, b = _instant(start), _instant(end)
    return None if a is None or b is None else (b - a).total_seconds()


def duration(seconds: float) -> str:
    """A duration in at most two units: ``350ms``, ``1.2s``, ``4m05s``, ``2h03m``, ``3d04h``."""
    seconds = abs(seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    whole = int(seconds)
    for size, unit, small, small_unit in _UNITS:
        if whole >= size:
            return f"{whole // size}{unit}{(whole % size) // small:02d}{small_unit}"
    raise AssertionError("unreachable")


def between(start: object, end: object) -> str:
    """The duration from ``start`` to ``end`` (e.g. a step's ``x-started-at`` to its
    ``x-ended-at``), "" when either is missing."""
    seconds = seconds_between(start, end)
    return "" if seconds is None else duration(seconds)


def offset(at: object, origin: object) -> str:
    """``at`` relative to ``origin`` (the run's start): ``+1.2s``; "" when either is missing."""
    seconds = seconds_between(origin, at)
    if seconds is None:
        return ""
    return ("-" if seconds < 0 else "+") + duration(seconds)


def ago(at: object, now: datetime) -> str:
    """``at`` relative to the reader's clock: ``12s ago``, ``5m ago``, ``3h04m ago``; a time
    more than 30 days back is its date. "" when missing."""
    instant = _instant(at)
    if instant is None:
        return ""
    seconds = (now - instant).total_seconds()
    if seconds < 0:
        return "in " + duration(seconds)
    if seconds >= 30 * 86_400:
        return instant.date().isoformat()
    if seconds < 1:
        return "just now"
    if seconds < 60:
        return f"{duration(seconds)} ago"
    if seconds < 3_600:  # minutes are precise enough once a minute has passed
        return f"{int(seconds // 60)}m ago"
    return duration(seconds).removesuffix("00m").removesuffix("00h") + " ago"


def elapsed(at: object, now: datetime) -> str:
    """How long since ``at`` (a run still running), "" when missing."""
    instant = _instant(at)
    return "" if instant is None else duration((now - instant).total_seconds())
