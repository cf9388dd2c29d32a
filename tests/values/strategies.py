"""Hypothesis strategies for runtime values, typed values and plain JSON documents."""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

from forkline_es.values import Duration, FileRef, Timestamp

IANA = ["Europe/Paris", "America/New_York", "Asia/Kolkata", "UTC", "Australia/Lord_Howe"]

# Every character UTF-8 can carry: control characters, BMP and astral, no lone surrogates.
text = st.text(st.characters(codec="utf-8"), max_size=12)
keys = st.one_of(st.sampled_from(["a", "b", "items", "at", "a b", "", "\U0001f600", "\uffff"]), text)
ints = st.one_of(st.integers(), st.integers(-(2**300), 2**300))
floats = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.just(-0.0))

offsets = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))
tzinfos = st.one_of(st.just(UTC), offsets, st.sampled_from(IANA).map(ZoneInfo))
aware_datetimes = st.datetimes(
    min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=tzinfos
)
zone_texts = st.one_of(
    st.sampled_from(["Z", "+00:00", "-00:00", "+05:30", "-23:59", "+14:00", *IANA]),
)
utc_datetimes = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)
).map(lambda dt: dt.replace(tzinfo=UTC))
timestamps = st.builds(Timestamp, utc_datetimes, zone_texts)
whole_ms_timedeltas = st.integers(-(10**15), 10**15).map(lambda ms: timedelta(milliseconds=ms))
durations = st.builds(Duration, ints)
digests = st.binary(max_size=8).map(lambda b: "sha256:" + hashlib.sha256(b).hexdigest())
file_refs = st.builds(
    FileRef,
    reference=text.filter(bool),
    name=st.none() | text,
    media_type=st.none() | st.sampled_from(["text/plain", "application/json"]),
    size=st.none() | st.integers(0, 2**70),
    digest=st.none() | digests,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    ints,
    floats,
    text,
    aware_datetimes,
    timestamps,
    whole_ms_timedeltas,
    durations,
    file_refs,
)

python_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=20,
)


def canonical_text(dt: datetime) -> str:
    """Canonical UTC text built independently of the code under test."""
    u = dt.astimezone(UTC)
    base = f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}"
    fraction = f"{u.microsecond:06d}".rstrip("0")
    return f"{base}.{fraction}Z" if fraction else base + "Z"


def _tv(kind: str, value: Any) -> dict[str, Any]:
    return {"kind": kind, "value": value}


def _file_body(ref: FileRef) -> dict[str, Any]:
    body: dict[str, Any] = {"reference": ref.reference, "name": ref.name}
    body["media_type"] = ref.media_type
    body |= {"size": ref.size, "digest": ref.digest}
    return {k: v for k, v in body.items() if v is not None}


typed_scalars = st.one_of(
    st.just(_tv("null", None)),
    st.booleans().map(lambda b: _tv("bool", b)),
    ints.map(lambda i: _tv("int", i)),
    floats.map(lambda f: _tv("float", f)),
    text.map(lambda s: _tv("string", s)),
    st.tuples(utc_datetimes, zone_texts).map(
        lambda p: _tv("timestamp", {"instant": canonical_text(p[0]), "zone": p[1]})
    ),
    ints.map(lambda i: _tv("duration", i)),
    file_refs.map(lambda r: _tv("file", _file_body(r))),
)

typed_values = st.recursive(
    typed_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda xs: _tv("list", xs)),
        st.dictionaries(keys, children, max_size=4).map(lambda m: _tv("map", m)),
    ),
    max_leaves=20,
)

json_scalars = st.one_of(st.none(), st.booleans(), ints, floats, text)
json_documents = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=5),
    ),
    max_leaves=25,
)


def shuffled(doc: Any, rng: random.Random) -> Any:
    """The same document with every map rebuilt in a random insertion order."""
    if isinstance(doc, dict):
        items = list(doc.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(doc, list):
        return [shuffled(v, rng) for v in doc]
    return doc
