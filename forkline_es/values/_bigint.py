"""Integers of any size as exact decimal text, without Python's int <-> str digit limit.

decisions.md makes integers of any size values of the domain, but Python (3.11+) refuses
to convert an int of more than ``sys.get_int_max_str_digits()`` digits (4,300 by default)
to or from decimal text, and msgspec's JSON encoder and decoder inherit that limit. The
limit is process-global, so it is never changed here: these two conversions split a large
number into pieces small enough for any setting of the limit (at least 640 digits) and
join the pieces' text. Both cost time that grows faster than the length (about 1.5 s to
write and 3 s to read a million digits), which the payload size limit bounds.

Only the rare large integer takes this path: the JSON codecs try msgspec first.
"""

from __future__ import annotations

import decimal
from functools import lru_cache
from typing import Final

__all__ = ["SMALL_BITS", "int_from_text", "int_text"]

#: An int of at most this many bits has at most 603 decimal digits: below any digit limit.
SMALL_BITS: Final = 2000
_SMALL_DIGITS: Final = 600
# Exact arithmetic: enough precision for any product, and every inexact result an error.
_EXACT: Final = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.Inexact, decimal.Overflow, decimal.InvalidOperation],
)


@lru_cache(maxsize=64)
def _power_of_two(bits: int) -> decimal.Decimal:
    return _EXACT.power(decimal.Decimal(2), bits)


def _to_decimal(n: int, bits: int) -> decimal.Decimal:
    """``n >= 0`` of ``bits`` bits as a Decimal: halves by bits, joined with exact arithmetic."""
    if bits <= SMALL_BITS:
        return decimal.Decimal(n)  # from the binary digits, not via decimal text
    half = bits >> 1
    high = n >> half
    low = n - (high << half)
    joined = _EXACT.multiply(_to_decimal(high, bits - half), _power_of_two(half))
    return _EXACT.add(joined, _to_decimal(low, half))


def int_text(n: int) -> str:
    """The exact decimal digits of ``n`` (with ``-`` when negative), whatever its size."""
    magnitude = -n if n < 0 else n
    bits = magnitude.bit_length()
    if bits <= SMALL_BITS:
        return str(n)
    digits = format(_to_decimal(magnitude, bits), "f")
    return "-" + digits if n < 0 else digits


@lru_cache(maxsize=64)
def _power_of_ten(digits: int) -> int:
    return int(10**digits)


def _from_digits(text: str, start: int, end: int) -> int:
    if end - start <= _SMALL_DIGITS:
        return int(text[start:end])
    middle = end - (end - start) // 2
    return _from_digits(text, start, middle) * _power_of_ten(end - middle) + _from_digits(text, middle, end)


def int_from_text(text: str) -> int:
    """The int of JSON integer text (``-?[0-9]+``), whatever its length."""
    if len(text) <= _SMALL_DIGITS:
        return int(text)
    negative = text.startswith("-")
    start = 1 if negative else 0
    if not text[start:].isdigit() or not text.isascii():
        raise ValueError(f"not an integer: {text[:40]!r}...")
    n = _from_digits(text, start, len(text))
    return -n if negative else n
