"""Values outside the typed domain are refused with a path and a reason, never coerced."""

from __future__ import annotations

import enum
import math
from collections import OrderedDict
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from forkline_es.errors import InvalidValue
from forkline_es.values import (
    MAX_DEPTH,
    decode_value,
    decode_value_json,
    encode_value,
    encode_value_json,
)


class Colour(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"a": [0, 1, {"b": math.nan}]}, "$<key 0>[2]<key 0>", "nan"),
        ({"a": [0, 1, {"b": math.inf}]}, "$<key 0>[2]<key 0>", "inf"),
        ([-math.inf], "$[0]", "inf"),
        ({"items": [0, 1, 2, {"at": datetime(2024, 1, 1)}]}, "$<key 0>[3]<key 0>", "naive"),
        ({"a b": b"x"}, "$<key 0>", "bytes"),
        ({"x": [{1, 2}]}, "$<key 0>[0]", "set"),
        ({"x": frozenset()}, "$<key 0>", "frozenset"),
        ({"m": {1: "one"}}, "$<key 0><key 0>", "not a string"),
        ({"o": object()}, "$<key 0>", "object"),
        ({"d": date(2024, 1, 1)}, "$<key 0>", "date"),
        ({"e": Colour.RED}, "$<key 0>", "subclass of int"),
        ({"t": timedelta(microseconds=1500)}, "$<key 0>", "milliseconds"),
        ({"s": "\ud800"}, "$<key 0>", "surrogate"),
        ({"z": datetime(2024, 1, 1, tzinfo=timezone(timedelta(seconds=30)))}, "$<key 0>", "minutes"),
        ({'q"\n': None, "k": bytearray()}, "$<key 1>", "bytearray"),
    ],
)
def test_refused_with_path_and_reason(value: object, path: str, reason: str) -> None:
    for encode in (encode_value, encode_value_json):
        with pytest.raises(InvalidValue) as caught:
            encode(value)
        assert caught.value.path == path
        assert reason in caught.value.message
        assert str(caught.value).startswith("invalid-value: ")
        assert str(caught.value).endswith(f"at `{path}`")


def test_map_keys_are_named_by_position_never_by_text() -> None:
    """A key is recorded data and may be a secret: a refusal names where it is, not what."""
    with pytest.raises(InvalidValue) as caught:
        encode_value({"x": 1, 'a "b"\n': {"é": [object()]}})
    assert caught.value.path == "$<key 1><key 0>[0]"
    secret = "sk_live_" + "a1" * 12
    for value in (
        {"ok": {secret: math.nan}},
        {"ok": {secret: 1, 2: "two"}},
        {secret: "\ud800"},
        {"\udc00" + secret: 1},
    ):
        for encode in (encode_value, encode_value_json):
            with pytest.raises(InvalidValue) as caught:
                encode(value)
            assert secret not in str(caught.value) and "a1a1" not in caught.value.path
    with pytest.raises(InvalidValue) as caught:
        decode_value({"kind": "map", "value": {"a": {"kind": "int", "value": 1}, secret: {"kind": "x"}}})
    assert caught.value.path == "$.value<key 1>"
    assert secret not in str(caught.value)


def test_bool_and_int_and_float_stay_distinct() -> None:
    assert encode_value(True) == {"kind": "bool", "value": True}
    assert encode_value(1) == {"kind": "int", "value": 1}
    assert encode_value(1.0) == {"kind": "float", "value": 1.0}
    assert type(decode_value({"kind": "int", "value": 1})) is int
    assert type(decode_value({"kind": "float", "value": 1.0})) is float


def test_container_subclasses_encode_as_their_kind() -> None:
    assert encode_value(OrderedDict(a=1)) == encode_value({"a": 1})


def test_nesting_up_to_the_limit_is_accepted_and_beyond_it_refused() -> None:
    deep: Any = 0
    for _ in range(MAX_DEPTH):
        deep = [deep]
    stored = encode_value_json(deep)
    assert decode_value_json(stored) == deep
    with pytest.raises(InvalidValue, match="nesting deeper than 256"):
        encode_value([deep])


def test_a_cycle_is_refused_not_a_crash() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(InvalidValue, match="nesting"):
        encode_value({"c": cycle})


INSTANT = "2024-05-06T07:08:09.5Z"


@pytest.mark.parametrize(
    ("typed", "path", "reason"),
    [
        ([], "$", "must be an object"),
        ({"value": 1}, "$", "missing kind"),
        ({"kind": "int"}, "$", "missing value"),
        ({"kind": "int", "value": 1, "extra": 2}, "$", "unknown 'extra'"),
        ({"kind": "integer", "value": 1}, "$", "unknown kind"),
        ({"kind": 3, "value": 1}, "$", "kind must be a string"),
        ({"kind": "int", "value": "1"}, "$.value", "integer"),
        ({"kind": "int", "value": True}, "$.value", "integer"),
        ({"kind": "int", "value": 1.0}, "$.value", "integer"),
        ({"kind": "float", "value": 1}, "$.value", "float"),
        ({"kind": "float", "value": math.nan}, "$.value", "nan"),
        ({"kind": "bool", "value": 0}, "$.value", "true or false"),
        ({"kind": "null", "value": 0}, "$.value", "null"),
        ({"kind": "string", "value": None}, "$.value", "string"),
        ({"kind": "list", "value": {}}, "$.value", "array"),
        ({"kind": "list", "value": [{"kind": "int", "value": 1}, {}]}, "$.value[1]", "missing"),
        ({"kind": "map", "value": []}, "$.value", "object"),
        ({"kind": "map", "value": {"a b": {"kind": "x", "value": 1}}}, "$.value<key 0>", "kind"),
        ({"kind": "duration", "value": 1.5}, "$.value", "milliseconds"),
        ({"kind": "duration", "value": False}, "$.value", "milliseconds"),
        ({"kind": "timestamp", "value": INSTANT}, "$.value", "instant, zone"),
        ({"kind": "timestamp", "value": {"instant": INSTANT}}, "$.value", "instant, zone"),
        (
            {"kind": "timestamp", "value": {"instant": INSTANT, "zone": "Mars/Olympus"}},
            "$.value.zone",
            "zone",
        ),
        (
            {"kind": "timestamp", "value": {"instant": INSTANT, "zone": "localtime"}},
            "$.value.zone",
            "zone",
        ),
        (
            {"kind": "timestamp", "value": {"instant": INSTANT, "zone": "+24:00"}},
            "$.value.zone",
            "zone",
        ),
        (
            {"kind": "timestamp", "value": {"instant": "2024-05-06T07:08:09.50Z", "zone": "Z"}},
            "$.value.instant",
            "canonical",
        ),
        (
            {"kind": "timestamp", "value": {"instant": "2024-05-06 07:08:09Z", "zone": "Z"}},
            "$.value.instant",
            "canonical",
        ),
        (
            {"kind": "timestamp", "value": {"instant": "2024-02-30T00:00:00Z", "zone": "Z"}},
            "$.value.instant",
            "canonical",
        ),
        (
            {"kind": "timestamp", "value": {"instant": "2024-05-06T07:08:09+00:00", "zone": "Z"}},
            "$.value.instant",
            "canonical",
        ),
        ({"kind": "file", "value": {}}, "$.value", "reference"),
        ({"kind": "file", "value": {"reference": ""}}, "$.value", "reference"),
        ({"kind": "file", "value": {"reference": "r", "size": -1}}, "$.value", "size"),
        ({"kind": "file", "value": {"reference": "r", "name": None}}, "$.value", "null"),
        ({"kind": "file", "value": {"reference": "r", "digest": "sha256:AB"}}, "$.value", "hex"),
        ({"kind": "file", "value": {"reference": "r", "url": "x"}}, "$.value", "unknown"),
    ],
)
def test_bad_typed_values_are_refused_with_path(typed: object, path: str, reason: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        decode_value(typed)
    assert caught.value.path == path
    assert reason in caught.value.message


@pytest.mark.parametrize("stored", [b"", b"{", b'{"kind":"float","value":1e400}', b'"\\ud800"', b"[1,]"])
def test_bad_typed_value_json_is_refused(stored: bytes) -> None:
    with pytest.raises(InvalidValue):
        decode_value_json(stored)


def test_timestamp_kinds_decode_to_timestamps_that_equal_the_datetime() -> None:
    aware = datetime(2024, 5, 6, 7, 8, 9, 500000, tzinfo=UTC)
    decoded = decode_value(encode_value(aware))
    assert decoded == aware and aware == decoded
    assert hash(decoded) == hash(aware)
