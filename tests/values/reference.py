"""A plain, obviously-correct canonical JSON encoder: the yardstick for ``canonical_json``.

Written straight from decisions.md without msgspec, so agreement between the two is
evidence that the fast path follows the rules (sorting by code point, escapes, floats).
"""

from __future__ import annotations

import math

import msgspec

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def ref_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def ref_float(f: float) -> str:
    """Shortest round-trip digits (Python's repr), laid out in decimal for 1e-5 <= |f| < 1e16."""
    assert math.isfinite(f)
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    text = repr(abs(f))
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + exponent  # value = 0.<digits> * 10**point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    if not digits:
        return sign + "0.0"
    sci = point - 1  # value = d.ddd * 10**sci
    if -5 <= sci < 16:
        if sci >= 0:
            integer = digits[: sci + 1].ljust(sci + 1, "0")
            return f"{sign}{integer}.{digits[sci + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-sci - 1)}{digits}"
    head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{head}e{sci}"


def _ref(obj: object) -> str:
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if type(obj) is int:
        return str(obj)
    if type(obj) is float:
        return ref_float(obj)
    if type(obj) is str:
        return ref_string(obj)
    if type(obj) is msgspec.Raw:
        return bytes(obj).decode("utf-8")
    if isinstance(obj, list | tuple):
        return "[" + ",".join(_ref(item) for item in obj) + "]"
    if isinstance(obj, dict):
        # Code point order, spelled out: UTF-32 big-endian bytes sort exactly by code point.
        keys = sorted(obj, key=lambda k: k.encode("utf-32-be"))
        return "{" + ",".join(ref_string(k) + ":" + _ref(obj[k]) for k in keys) + "}"
    raise TypeError(type(obj).__name__)


def ref_canonical(obj: object) -> bytes:
    return _ref(obj).encode("utf-8")
