"""Forkline's ``canon``: the bytes its replay and diff compare, and their SHA-256.

These are Forkline's comparison bytes, not the store's canonical JSON: a caller may hold
hashes of them (golden files, CI baselines), so they are reproduced exactly, quirks included
(``NaN`` becomes the string ``"NaN"``, ``-0.0`` becomes ``0.0``, strings are NFC-normalized
with LF newlines, any other object becomes its ``str``). Nothing here is written to the log:
the store still refuses NaN (docs/forkline.md lists the difference).
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from typing import Any

__all__ = ["bytes_preview", "canon", "sha256_hex"]


def canon(value: Any, profile: str = "strict") -> bytes:
    """``value`` as comparison bytes: bytes as they are, a string normalized, else compact JSON."""
    if profile != "strict":
        raise ValueError(f"unknown canonicalization profile {profile!r}: only 'strict' exists")
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return _text(value).encode("utf-8")
    text = json.dumps(_plain(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """The bare lower-case hex SHA-256 of ``data`` (Forkline's form, no ``sha256:`` prefix)."""
    return hashlib.sha256(data).hexdigest()


def bytes_preview(data: bytes, max_len: int = 16) -> str:
    """``sha256:<hex digest>:<hex of the first max_len bytes>``: a short, safe look at bytes."""
    return f"sha256:{sha256_hex(data)}:{data[:max_len].hex()}"


def _text(s: str) -> str:
    return unicodedata.normalize("NFC", s).replace("\r\n", "\n").replace("\r", "\n")


def _number(f: float) -> float | str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    rounded = float(f"{f:.17g}")
    return 0.0 if rounded == 0.0 else rounded  # -0.0 and 0.0 compare as one value


def _plain(value: Any) -> Any:
    """``value`` reduced to what ``json.dumps`` writes the same way every time."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bytes):
        return {"__bytes__": True, "length": len(value), "sha256": sha256_hex(value)}
    if isinstance(value, dict):
        # Keys compared as text, so {1: ...} and {"1": ...} sort (and collide) as in Forkline.
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)
