"""Canonical JSON (decisions.md, Canonical JSON Value Serialization).

msgspec's sorted-order JSON encoder writes exactly the canonical bytes for the plain JSON
domain (checked against a plain reference encoder in tests/values): keys sorted by code
point (Python ``str`` order, not UTF-16 order), ``"`` ``\\`` and control characters escaped
with ``\\b \\f \\n \\r \\t`` or lower-case ``\\u00XX`` and nothing else, integers of any size
exact, floats as the shortest round-trip text with a ``.`` or an exponent (decimal
notation for 1e-5 <= |x| < 1e16, otherwise ``1e16`` / ``1.5e-7``).

What msgspec does *not* do is refuse values outside the domain: it writes NaN and the
infinities as ``null``, and it encodes datetimes, bytes, sets and more. So every document
is walked once first; the walk raises with the path of the first offending element.

msgspec writes and reads integers only up to Python's int <-> str digit limit (4,300
digits by default); ``encode_json`` and ``decode_json`` take over beyond it (``_bigint``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeGuard, overload

import msgspec

from forkline_es.errors import InvalidRequest, shown
from forkline_es.values._bigint import SMALL_BITS, int_from_text, int_text
from forkline_es.values._paths import KeyAt, Refused, refused_to_invalid

__all__ = [
    "ENCODER",
    "MAX_JSON_DEPTH",
    "SURROGATE",
    "canonical_json",
    "decode_json",
    "encode_json",
    "is_text",
]

ENCODER = msgspec.json.Encoder(order="sorted")
# Deep enough for 256 levels of typed values (two JSON levels each) inside a document,
# shallow enough for the recursive walk and msgspec under Python's default recursion limit.
MAX_JSON_DEPTH = 600
# A lone surrogate cannot be written as UTF-8; it is refused like any value outside the domain.
SURROGATE = re.compile("[\ud800-\udfff]")

_isfinite = math.isfinite


def is_text(value: object) -> TypeGuard[str]:
    """A nonempty ``str`` that UTF-8 can encode: what every name and identifier must be.

    A lone surrogate would otherwise reach SQLite or the encoder and fail there as a
    ``UnicodeEncodeError`` instead of a coded refusal.
    """
    return type(value) is str and value != "" and (value.isascii() or SURROGATE.search(value) is None)


_Raw = msgspec.Raw


def _check(obj: object, depth: int) -> None:
    """Raise :class:`Refused` for the first element of ``obj`` outside the JSON domain."""
    t = type(obj)
    if type(obj) is str:
        if not obj.isascii() and SURROGATE.search(obj):
            raise Refused("string contains a lone surrogate, which UTF-8 cannot encode")
    elif t is int or t is bool or obj is None or t is _Raw:
        pass
    elif type(obj) is float:
        if not _isfinite(obj):
            raise Refused(f"float {obj!r} is not a value (NaN and infinities are refused)")
    elif isinstance(obj, dict):
        if depth >= MAX_JSON_DEPTH:
            raise Refused(f"nesting deeper than {MAX_JSON_DEPTH} levels")
        for position, key in enumerate(obj):  # the key's text is never quoted: it may be a secret
            if type(key) is not str:
                raise _at_key(f"object key of type {type(key).__name__} is not a string", position)
            if not key.isascii() and SURROGATE.search(key):
                raise _at_key("object key contains a lone surrogate", position)
        key = None
        try:
            for key, item in obj.items():  # noqa: B007 - key is read in the handler
                _check(item, depth + 1)
        except Refused as refused:
            refused.segments.append(KeyAt(list(obj).index(key)))
            raise
    elif isinstance(obj, list | tuple):
        if depth >= MAX_JSON_DEPTH:
            raise Refused(f"nesting deeper than {MAX_JSON_DEPTH} levels")
        index = 0
        try:
            for index, item in enumerate(obj):  # noqa: B007 - index is read in the handler
                _check(item, depth + 1)
        except Refused as refused:
            refused.segments.append(index)
            raise
    else:
        raise Refused(
            f"{t.__name__} is not plain JSON (dict with str keys, list, str, int, "
            "finite float, bool, None or msgspec.Raw)"
        )


def _at_key(message: str, position: int) -> Refused:
    """A refusal of the map key at ``position`` itself."""
    refused = Refused(message)
    refused.segments.append(KeyAt(position))
    return refused


def canonical_json(obj: object) -> bytes:
    """The canonical UTF-8 bytes of a plain JSON document; the same document, the same bytes.

    ``msgspec.Raw`` fragments are inserted verbatim (they must already be canonical).
    Raises ``InvalidValue`` with the path of the first element outside the domain.
    """
    try:
        _check(obj, 0)
    except Refused as refused:
        raise refused_to_invalid(refused) from None
    try:  # encode_json, inlined: this is on every append's path
        return ENCODER.encode(obj)
    except ValueError:
        return encode_json(obj)


def _large_ints_raw(obj: Any) -> Any:
    """``obj`` with every integer too large for msgspec replaced by its digits as ``Raw``."""
    t = type(obj)
    if t is int:
        return obj if obj.bit_length() <= SMALL_BITS else _Raw(int_text(obj).encode())
    if isinstance(obj, dict):
        return {key: _large_ints_raw(item) for key, item in obj.items()}
    if isinstance(obj, list | tuple):
        return [_large_ints_raw(item) for item in obj]
    return obj


def encode_json(obj: Any) -> bytes:
    """``ENCODER.encode(obj)`` for a document already checked, integers of any size included.

    msgspec refuses an integer beyond the digit limit with ``ValueError``; only then is the
    document copied with those integers as exact digit text (the common case pays nothing).
    """
    try:
        return ENCODER.encode(obj)
    except ValueError:
        return ENCODER.encode(_large_ints_raw(obj))


_DECODER = msgspec.json.Decoder()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_json(data: bytes | bytearray | memoryview | str) -> Any:
    """Plain JSON text as Python data, integers of any size included.

    Raises ``msgspec.DecodeError`` for text that is not JSON, and for JSON nested deeper
    than the interpreter can follow (never a ``RecursionError``).
    """
    try:
        return _DECODER.decode(data)
    except RecursionError:
        raise msgspec.DecodeError("JSON is nested too deeply to read") from None
    except msgspec.ValidationError as e:
        if "Integer value out of range" not in str(e):
            raise
    # An integer beyond msgspec's reach: the standard parser, with exact big integers.
    try:
        text = data if isinstance(data, str) else bytes(data).decode()
        return json.loads(text, parse_int=int_from_text, parse_constant=_no_constant)
    except RecursionError:
        raise msgspec.DecodeError("JSON is nested too deeply to read") from None
    except ValueError as e:
        raise msgspec.DecodeError(f"JSON is malformed: {e}") from None


@overload
def check_text(value: object, what: str) -> str: ...
@overload
def check_text(value: object, what: str, *, optional: bool) -> str | None: ...
def check_text(value: object, what: str, *, optional: bool = False) -> str | None:
    """``value`` when it is a nonempty string UTF-8 can encode, without NUL (None too when
    ``optional``), else ``invalid-request`` naming ``what``.

    NUL is refused: C tools (sqlite3's shell, terminals, log shippers) cut text at it, so
    ``a\\x00b`` would show as ``a`` and could pass for another run, workflow or code.
    """
    if value is None and optional:
        return None
    if not is_text(value) or "\x00" in value:
        raise InvalidRequest(
            f"{what} must be a nonempty string of Unicode text without NUL, not {shown(value)}"
        )
    return value
