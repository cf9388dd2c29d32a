"""Strict equality for round trips: same kinds, same types, signed zero kept."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from forkline_es.values import Duration, Timestamp


def strictly_equal(original: Any, decoded: Any) -> bool:
    """``decoded`` is what decoding must give back for ``original``.

    Unlike ``==`` this tells 1, 1.0 and True apart and -0.0 from 0.0. Tuples come back as
    lists, aware datetimes as Timestamps and timedeltas as Durations (decisions.md table).
    """
    t = type(original)
    if t is float:
        return type(decoded) is float and repr(original) == repr(decoded)
    if isinstance(original, datetime):
        return type(decoded) is Timestamp and decoded == original
    if t is Timestamp:
        return (
            type(decoded) is Timestamp
            and decoded.zone == original.zone
            and decoded.instant == original.instant
        )
    if isinstance(original, timedelta):
        return type(decoded) is Duration and decoded == original
    if t is list or t is tuple:
        return (
            type(decoded) is list
            and len(decoded) == len(original)
            and all(strictly_equal(a, b) for a, b in zip(original, decoded, strict=True))
        )
    if t is dict:
        return (
            type(decoded) is dict
            and decoded.keys() == original.keys()
            and all(strictly_equal(original[k], decoded[k]) for k in original)
        )
    return type(decoded) is t and decoded == original
