"""Typed values: the ``{kind, value}`` encoding of runtime values (decisions.md, Typed values).

``encode_value`` runs on every recorded payload, so it dispatches on ``type(v) is ...``
with the common kinds first and builds no path while it descends (see ``_paths``).
``decode_value`` is strict: it accepts exactly what ``encode_value`` can produce, so that
``encode_value(decode_value(t)) == t`` for every typed value it accepts.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from typing import Any

import msgspec

from forkline_es.errors import InvalidValue
from forkline_es.values._canonical import SURROGATE, decode_json, encode_json
from forkline_es.values._file import FILE_MEMBERS, FileRef, check_file_members, file_body
from forkline_es.values._paths import KeyAt, Refused, refused_to_invalid
from forkline_es.values._time import (
    Duration,
    Timestamp,
    is_valid_zone,
    parse_instant,
    timedelta_ms,
    utc_text,
    zone_of,
)

__all__ = [
    "MAX_DEPTH",
    "decode_value",
    "decode_value_json",
    "encode_value",
    "encode_value_json",
]

MAX_DEPTH = 256
"""Lists and maps nested deeper than this are refused: no real payload needs more, and a
cyclic structure is caught here instead of overflowing the stack."""

_isfinite = math.isfinite
_KINDS = "null, bool, int, float, string, list, map, timestamp, duration, file"


def _too_deep() -> Refused:
    return Refused(f"nesting deeper than {MAX_DEPTH} levels of lists and maps")


def _enc(v: Any, depth: int) -> dict[str, Any]:
    t = type(v)
    if t is str:
        if not v.isascii() and SURROGATE.search(v):
            raise Refused("string contains a lone surrogate, which UTF-8 cannot encode")
        return {"kind": "string", "value": v}
    if t is int:
        return {"kind": "int", "value": v}
    if t is dict:
        return _enc_map(v, depth)
    if t is list or t is tuple:
        return _enc_list(v, depth)
    if t is float:
        if not _isfinite(v):
            raise Refused(f"float {v!r} is not a value (NaN and infinities are refused)")
        return {"kind": "float", "value": v}
    if t is bool:
        return {"kind": "bool", "value": v}
    if v is None:
        return {"kind": "null", "value": None}
    return _enc_other(v, depth)


def _bad_key(key: object, position: int) -> Refused:
    """The refusal of a map key that is not text, at its position: the key itself is never
    quoted, since a key is recorded data and may be a secret."""
    if type(key) is str:
        refused = Refused("map key contains a lone surrogate")
    else:
        refused = Refused(f"map key of type {type(key).__name__} is not a string")
    refused.segments.append(KeyAt(position))
    return refused


def _enc_map(v: dict[Any, Any], depth: int) -> dict[str, Any]:
    if depth >= MAX_DEPTH:
        raise _too_deep()
    depth += 1
    out: dict[str, Any] = {}
    for key, item in v.items():
        if type(key) is not str or (not key.isascii() and SURROGATE.search(key)):
            raise _bad_key(key, len(out))
        try:
            out[key] = _enc(item, depth)
        except Refused as refused:
            refused.segments.append(KeyAt(len(out)))
            raise
    return {"kind": "map", "value": out}


def _enc_list(v: list[Any] | tuple[Any, ...], depth: int) -> dict[str, Any]:
    if depth >= MAX_DEPTH:
        raise _too_deep()
    depth += 1
    out: list[dict[str, Any]] = []
    for item in v:
        try:
            out.append(_enc(item, depth))
        except Refused as refused:
            refused.segments.append(len(out))
            raise
    return {"kind": "list", "value": out}


def _enc_other(v: object, depth: int) -> dict[str, Any]:
    """The rarer kinds, subclasses of containers, and the refusals with their reasons."""
    if isinstance(v, datetime):
        if v.utcoffset() is None:
            raise Refused("naive datetime (no tzinfo); pass an aware datetime")
        zone = zone_of(v)
        return {"kind": "timestamp", "value": {"instant": utc_text(v), "zone": zone}}
    if type(v) is Timestamp:
        return {"kind": "timestamp", "value": {"instant": utc_text(v.instant), "zone": v.zone}}
    if isinstance(v, timedelta):
        return {"kind": "duration", "value": timedelta_ms(v)}
    if type(v) is Duration:
        return {"kind": "duration", "value": v.ms}
    if type(v) is FileRef:
        return {"kind": "file", "value": file_body(v)}
    if isinstance(v, bool | int | float | str):
        base = next(b for b in (bool, int, float, str) if isinstance(v, b)).__name__
        raise Refused(f"{type(v).__name__} is a subclass of {base}; pass a plain {base} (e.g. its .value)")
    if isinstance(v, dict):
        return _enc_map(v, depth)
    if isinstance(v, list | tuple):
        return _enc_list(v, depth)
    if isinstance(v, date):
        raise Refused("a date is not a value; pass an aware datetime")
    if isinstance(v, bytes | bytearray | memoryview):
        raise Refused(f"{type(v).__name__} is not a value; store bytes as an artifact and pass a FileRef")
    if isinstance(v, set | frozenset):
        raise Refused(f"{type(v).__name__} is not a value; pass a sorted list")
    raise Refused(
        f"{type(v).__name__} is not a value (None, bool, int, float, str, list, tuple, dict, "
        "aware datetime, timedelta, Timestamp, Duration or FileRef)"
    )


def encode_value(v: object) -> dict[str, Any]:
    """The typed value ``{"kind": ..., "value": ...}`` of a Python value.

    Raises ``InvalidValue`` naming the path of the first element outside the domain
    (``$.items[3].at``, ``$["a b"]``).
    """
    try:
        return _enc(v, 0)
    except Refused as refused:
        raise refused_to_invalid(refused) from None


def encode_value_json(v: object) -> bytes:
    """Canonical JSON of ``encode_value(v)`` in one pass over the value.

    The walk in ``_enc`` already refused everything msgspec would mis-encode, so its
    output goes straight to the encoder without the second check ``canonical_json`` makes.
    """
    try:
        typed = _enc(v, 0)
    except Refused as refused:
        raise refused_to_invalid(refused) from None
    return encode_json(typed)


def _type_name(v: object) -> str:
    return "null" if v is None else type(v).__name__


def _dec(d: object, depth: int) -> Any:
    if type(d) is not dict:
        raise Refused(f"a typed value must be an object {{kind, value}}, got {_type_name(d)}")
    if "kind" not in d or "value" not in d or len(d) != 2:
        missing = sorted({"kind", "value"} - d.keys())
        extra = sorted(repr(k) for k in d.keys() - {"kind", "value"})
        problem = f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(extra)}"
        raise Refused(f"a typed value has exactly the members kind and value ({problem})")
    kind = d["kind"]
    value = d["value"]
    try:
        if kind == "string":
            if type(value) is not str:
                raise Refused(f"kind `string` needs a string value, got {_type_name(value)}")
            if not value.isascii() and SURROGATE.search(value):
                raise Refused("string contains a lone surrogate")
            return value
        if kind == "int":
            if type(value) is not int:
                raise Refused(f"kind `int` needs an integer value, got {_type_name(value)}")
            return value
        if kind == "map":
            return _dec_map(value, depth)
        if kind == "list":
            return _dec_list(value, depth)
        if kind == "float":
            if type(value) is not float:
                raise Refused(f"kind `float` needs a float value, got {_type_name(value)}")
            if not _isfinite(value):
                raise Refused(f"float {value!r} is not a value (NaN and infinities are refused)")
            return value
        if kind == "bool":
            if type(value) is not bool:
                raise Refused(f"kind `bool` needs true or false, got {_type_name(value)}")
            return value
        if kind == "null":
            if value is not None:
                raise Refused(f"kind `null` needs a null value, got {_type_name(value)}")
            return None
        if kind == "timestamp":
            return _dec_timestamp(value)
        if kind == "duration":
            if type(value) is not int:
                raise Refused(f"kind `duration` needs integer milliseconds, got {_type_name(value)}")
            return Duration(value)
        if kind == "file":
            return _dec_file(value)
    except Refused as refused:
        refused.segments.append("value")
        raise
    if type(kind) is not str:
        raise Refused(f"kind must be a string, got {_type_name(kind)}")
    raise Refused(f"unknown kind {kind!r}; expected one of {_KINDS}")


def _dec_map(value: object, depth: int) -> dict[str, Any]:
    if type(value) is not dict:
        raise Refused(f"kind `map` needs an object of typed values, got {_type_name(value)}")
    if depth >= MAX_DEPTH:
        raise _too_deep()
    depth += 1
    out: dict[str, Any] = {}
    for key, item in value.items():
        if type(key) is not str or (not key.isascii() and SURROGATE.search(key)):
            raise _bad_key(key, len(out))
        try:
            out[key] = _dec(item, depth)
        except Refused as refused:
            refused.segments.append(KeyAt(len(out)))
            raise
    return out


def _dec_list(value: object, depth: int) -> list[Any]:
    if type(value) is not list and type(value) is not tuple:
        raise Refused(f"kind `list` needs an array of typed values, got {_type_name(value)}")
    if depth >= MAX_DEPTH:
        raise _too_deep()
    depth += 1
    out: list[Any] = []
    for item in value:
        try:
            out.append(_dec(item, depth))
        except Refused as refused:
            refused.segments.append(len(out))
            raise
    return out


def _dec_timestamp(value: object) -> Timestamp:
    if type(value) is not dict or value.keys() != {"instant", "zone"}:
        raise Refused("kind `timestamp` needs an object with exactly the members instant, zone")
    instant, zone = value["instant"], value["zone"]
    parsed = parse_instant(instant) if type(instant) is str else None
    if parsed is None:
        refused = Refused(
            f"instant {instant!r} is not a canonical UTC timestamp "
            "(YYYY-MM-DDTHH:MM:SS[.fraction]Z, fraction without trailing zeros)"
        )
        refused.segments.append("instant")
        raise refused
    if type(zone) is not str or not is_valid_zone(zone):
        refused = Refused(f"zone {zone!r} is not Z, a +HH:MM offset or a known IANA zone")
        refused.segments.append("zone")
        raise refused
    return Timestamp(parsed, zone)


def _dec_file(value: object) -> FileRef:
    if type(value) is not dict:
        raise Refused(f"kind `file` needs an object, got {_type_name(value)}")
    unknown = value.keys() - FILE_MEMBERS
    if unknown:
        raise Refused(
            f"kind `file` has unknown members {sorted(map(repr, unknown))}; "
            f"allowed: {', '.join(sorted(FILE_MEMBERS))}"
        )
    reference = value.get("reference")
    name, media_type = value.get("name"), value.get("media_type")
    size, digest = value.get("size"), value.get("digest")
    # An explicit null would not survive re-encoding (unset members are omitted).
    for member in ("name", "media_type", "size", "digest"):
        if member in value and value[member] is None:
            raise Refused(f"file `{member}` is null; omit members that are not set")
    check_file_members(reference, name, media_type, size, digest)
    return FileRef(reference, name, media_type, size, digest)  # type: ignore[arg-type]


def decode_value(d: object) -> Any:
    """The Python value of a typed value; strict, with the path of the first problem.

    Scalars, lists and maps come back as ``None``/``bool``/``int``/``float``/``str``/
    ``list``/``dict``; ``timestamp`` as :class:`Timestamp`, ``duration`` as
    :class:`Duration`, ``file`` as :class:`FileRef`.
    """
    try:
        return _dec(d, 0)
    except Refused as refused:
        raise refused_to_invalid(refused) from None


def decode_value_json(b: bytes | bytearray | memoryview | str) -> Any:
    """``decode_value`` of typed-value JSON text, as stored by ``encode_value_json``."""
    try:
        document = decode_json(b)
    except msgspec.DecodeError as exc:
        raise InvalidValue(f"typed value is not valid JSON ({exc})", "$") from None
    return decode_value(document)
