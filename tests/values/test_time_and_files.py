"""Timestamps, durations, file references and digests."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forkline_es.errors import InvalidValue
from forkline_es.values import (
    Duration,
    FileRef,
    Timestamp,
    canonical_timestamp,
    decode_value,
    encode_value,
    is_digest,
    parse_canonical_timestamp,
    sha256_digest,
    utc_now,
)
from forkline_es.values._time import utc_text, utc_text_of_ns

from .strategies import aware_datetimes, canonical_text

PARIS = ZoneInfo("Europe/Paris")


@settings(max_examples=250, deadline=None)
@given(aware_datetimes)
def test_canonical_timestamp_matches_the_rule_and_parses_back(dt: datetime) -> None:
    text = canonical_timestamp(dt)
    assert text == canonical_text(dt)
    # Through UTC: Python's cross-zone == is always False for a time in a DST fold.
    assert parse_canonical_timestamp(text) == dt.astimezone(UTC)


@pytest.mark.parametrize(
    ("dt", "text"),
    [
        (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "2024-01-02T03:04:05Z"),
        (datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC), "2024-01-02T03:04:05.12Z"),
        (datetime(2024, 1, 2, 3, 4, 5, 1, tzinfo=UTC), "2024-01-02T03:04:05.000001Z"),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"),
        (datetime(2024, 7, 1, 2, 0, tzinfo=PARIS), "2024-07-01T00:00:00Z"),
    ],
)
def test_canonical_timestamp_examples(dt: datetime, text: str) -> None:
    assert canonical_timestamp(dt) == text


def test_canonical_timestamp_refuses_naive_and_out_of_range() -> None:
    with pytest.raises(InvalidValue, match="aware"):
        canonical_timestamp(datetime(2024, 1, 1))
    with pytest.raises(InvalidValue, match="0001-9999"):
        canonical_timestamp(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    with pytest.raises(InvalidValue, match="canonical"):
        parse_canonical_timestamp("2024-01-01T00:00:00.000Z")


def test_utc_now_is_canonical() -> None:
    now = utc_now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,5}[1-9])?Z", now)
    assert abs(parse_canonical_timestamp(now) - datetime.now(UTC)) < timedelta(seconds=5)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_LAST_NS = (_LAST - _EPOCH) // timedelta(microseconds=1) * 1000


@given(st.lists(st.integers(min_value=0, max_value=_LAST_NS + 999), min_size=1, max_size=5))
def test_the_fast_clock_text_is_utc_text_of_the_floored_microsecond(instants: list[int]) -> None:
    """utc_now formats from time_ns with a per-second cache: any sequence of instants (the
    same second again, another second, back again) gives exactly utc_text's text."""
    for ns in instants + instants[:1]:
        expected = utc_text(_EPOCH + timedelta(microseconds=ns // 1000))
        assert utc_text_of_ns(ns) == expected
        assert utc_text_of_ns(ns - ns % 1_000_000_000 + 7_000) == utc_text(
            _EPOCH + timedelta(microseconds=(ns - ns % 1_000_000_000) // 1000 + 7)
        )


@pytest.mark.parametrize(
    ("tzinfo", "zone"),
    [
        (UTC, "Z"),
        (timezone(timedelta(0), "GMT"), "Z"),
        (timezone(timedelta(hours=5, minutes=30)), "+05:30"),
        (timezone(-timedelta(hours=3, minutes=15)), "-03:15"),
        (PARIS, "Europe/Paris"),
        (ZoneInfo("UTC"), "UTC"),
    ],
)
def test_datetime_zones_encode_as_decided(tzinfo: timezone | ZoneInfo, zone: str) -> None:
    dt = datetime(2024, 3, 4, 5, 6, 7, tzinfo=tzinfo)
    typed = encode_value(dt)
    assert typed["value"]["zone"] == zone
    decoded = decode_value(typed)
    assert isinstance(decoded, Timestamp) and decoded == dt and decoded.zone == zone
    assert decoded.to_datetime() == dt and decoded.to_datetime().utcoffset() == dt.utcoffset()


@pytest.mark.parametrize("zone", ["Z", "+00:00", "-00:00", "+05:30", "Asia/Kolkata"])
def test_explicit_zones_are_kept_verbatim(zone: str) -> None:
    typed = {"kind": "timestamp", "value": {"instant": "2024-01-01T00:00:00Z", "zone": zone}}
    assert encode_value(decode_value(typed)) == typed


def test_timestamp_equality_needs_the_same_zone() -> None:
    instant = datetime(2024, 1, 1, tzinfo=UTC)
    assert Timestamp(instant, "+00:00") != instant  # would encode with zone "Z"
    assert Timestamp(instant, "Z") == instant
    assert Timestamp(instant, "Z") != Timestamp(instant, "UTC")
    assert Timestamp(instant.astimezone(PARIS), "Z").instant.tzinfo is UTC
    assert Timestamp(instant) != "2024-01-01T00:00:00Z"


def test_timestamp_in_a_dst_fold_round_trips() -> None:
    # 02:30 happens twice in Paris on 2024-10-27; Python's cross-zone == is False there.
    later = datetime(2024, 10, 27, 2, 30, tzinfo=PARIS, fold=1)
    decoded = decode_value(encode_value(later))
    assert decoded == later
    assert decoded.instant == datetime(2024, 10, 27, 1, 30, tzinfo=UTC)


def test_timestamp_refuses_bad_parts() -> None:
    with pytest.raises(InvalidValue, match="aware"):
        Timestamp(datetime(2024, 1, 1))
    with pytest.raises(InvalidValue, match="zone"):
        Timestamp(datetime(2024, 1, 1, tzinfo=UTC), "Europe/Atlantis")
    with pytest.raises(InvalidValue, match="zone"):
        Timestamp(datetime(2024, 1, 1, tzinfo=UTC), "+5:30")


def test_durations() -> None:
    assert encode_value(timedelta(seconds=-1.5)) == {"kind": "duration", "value": -1500}
    assert encode_value(Duration(2**80)) == {"kind": "duration", "value": 2**80}
    decoded = decode_value({"kind": "duration", "value": 1500})
    assert decoded == Duration(1500) == timedelta(milliseconds=1500)
    assert timedelta(milliseconds=1500) == decoded
    assert hash(decoded) == hash(timedelta(milliseconds=1500))
    assert Duration(2**80) != timedelta.max and hash(Duration(2**80)) == hash(Duration(2**80))
    assert Duration(1) != timedelta(microseconds=1001)
    assert Duration.from_timedelta(timedelta(days=-1)).ms == -86_400_000
    assert Duration(5).to_timedelta() == timedelta(milliseconds=5)
    with pytest.raises(InvalidValue, match="milliseconds"):
        Duration.from_timedelta(timedelta(microseconds=-1))
    with pytest.raises(InvalidValue):
        Duration(True)


def test_file_refs_encode_only_the_members_that_are_set() -> None:
    digest = sha256_digest(b"hello")
    ref = FileRef("artifacts/a.txt", size=5, digest=digest)
    typed = encode_value(ref)
    assert typed == {
        "kind": "file",
        "value": {"reference": "artifacts/a.txt", "size": 5, "digest": digest},
    }
    assert decode_value(typed) == ref
    full = FileRef("r", name="a.txt", media_type="text/plain", size=0, digest=digest)
    assert decode_value(encode_value(full)) == full


@pytest.mark.parametrize(
    "kwargs",
    [
        {"reference": ""},
        {"reference": "r", "size": -1},
        {"reference": "r", "size": True},
        {"reference": "r", "digest": "sha256:" + "A" * 64},
        {"reference": "r", "digest": "md5:" + "a" * 32},
        {"reference": "r", "name": 3},
    ],
)
def test_file_ref_validates_on_construction(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidValue):
        FileRef(**kwargs)  # type: ignore[arg-type]


def test_digests() -> None:
    digest = sha256_digest(b"abc")
    assert digest == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert is_digest(digest)
    assert sha256_digest(memoryview(b"abc")) == digest
    assert not is_digest(digest.upper())
    assert not is_digest(digest + "\n")
    assert not is_digest(digest[:-1])
    assert not is_digest(None)
