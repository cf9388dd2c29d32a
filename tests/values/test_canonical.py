"""canonical_json: the fast msgspec path equals the plain rules of decisions.md."""

from __future__ import annotations

import json
import math
import random
from datetime import date
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forkline_es.errors import InvalidValue
from forkline_es.values import canonical_json

from .reference import ref_canonical, ref_float
from .strategies import floats, json_documents, shuffled

EXAMPLES = settings(max_examples=250, deadline=None)


@EXAMPLES
@given(json_documents)
def test_equals_the_reference_encoder(doc: Any) -> None:
    assert canonical_json(doc) == ref_canonical(doc)


@settings(max_examples=300, deadline=None)
@given(floats)
def test_float_tokens_round_trip_and_never_read_as_integers(f: float) -> None:
    token = canonical_json(f)
    assert token == ref_float(f).encode()
    assert b"." in token or b"e" in token
    parsed = float(token)
    assert parsed == f and math.copysign(1.0, parsed) == math.copysign(1.0, f)


@EXAMPLES
@given(json_documents, st.randoms(use_true_random=False))
def test_independent_of_map_insertion_order(doc: Any, rng: random.Random) -> None:
    assert canonical_json(shuffled(doc, rng)) == canonical_json(doc)


@EXAMPLES
@given(json_documents)
def test_bytes_parse_back_to_the_same_document(doc: Any) -> None:
    encoded = canonical_json(doc)
    for parsed in (json.loads(encoded), msgspec.json.decode(encoded)):
        assert canonical_json(parsed) == encoded  # a fixed point, -0.0 and kinds included
        assert parsed == doc


def test_keys_sort_by_code_point_not_utf16() -> None:
    # In UTF-16 the astral key (a surrogate pair, D83D...) would sort before U+FFFF / U+E000.
    doc = {"\U0001f600": 1, "\uffff": 2, "\U00010000": 3, "\ue000": 4, "a": 5, "": 6}
    assert canonical_json(doc) == (
        '{"":6,"a":5,"\ue000":4,"\uffff":2,"\U00010000":3,"\U0001f600":1}'.encode()
    )


def test_string_escapes_exactly_as_decided() -> None:
    text = "".join(map(chr, range(0x20))) + '"\\/\x7f\u2028é\U0001f600'
    expected = (
        '"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r'
        "\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018"
        '\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\\"\\\\/\x7f\u2028é\U0001f600"'
    )
    assert canonical_json(text) == expected.encode()


@pytest.mark.parametrize(
    ("value", "token"),
    [
        (1.0, b"1.0"),
        (-0.0, b"-0.0"),
        (0.0, b"0.0"),
        (1e21, b"1e21"),
        (1.5e-7, b"1.5e-7"),
        (1e16, b"1e16"),
        (1e15, b"1000000000000000.0"),
        (1e-5, b"0.00001"),
        (5e-324, b"5e-324"),
        (0.1, b"0.1"),
        (2**64, b"18446744073709551616"),
        (-(2**200), str(-(2**200)).encode()),
        (True, b"true"),
        (None, b"null"),
    ],
)
def test_scalar_tokens(value: object, token: bytes) -> None:
    assert canonical_json(value) == token


def test_no_whitespace_and_tuples_are_arrays() -> None:
    assert canonical_json({"b": (1, [2, {}]), "a": []}) == b'{"a":[],"b":[1,[2,{}]]}'


def test_raw_fragments_are_inserted_verbatim() -> None:
    assert canonical_json({"b": msgspec.Raw(b'{"x":1}'), "a": 0}) == b'{"a":0,"b":{"x":1}}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused_with_their_path(bad: float) -> None:
    with pytest.raises(InvalidValue) as caught:
        canonical_json({"a": [0, 1, {"b": bad}]})
    assert caught.value.path == "$<key 0>[2]<key 0>"
    assert caught.value.code == "invalid-value"
    assert "null" not in str(caught.value)


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"a": 0, 1: "x"}, "$<key 1>"),  # the key itself: by position, never quoted
        ({"a b": {"c": b"bytes"}}, "$<key 0><key 0>"),
        ([0, {1, 2}], "$[1]"),
        ({"k": object()}, "$<key 0>"),
        ({"k": "\ud800"}, "$<key 0>"),
        ({"\udfff": 1}, "$<key 0>"),
        ({"t": date(2024, 1, 1)}, "$<key 0>"),
    ],
)
def test_values_outside_plain_json_are_refused(doc: object, path: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        canonical_json(doc)
    assert caught.value.path == path


def test_absurd_nesting_is_refused_not_a_crash() -> None:
    doc: list[Any] = []
    for _ in range(5000):
        doc = [doc]
    with pytest.raises(InvalidValue, match="nesting"):
        canonical_json(doc)
