"""Round trips of typed values: decode(encode(v)) keeps v, encode(decode(t)) keeps t."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings

from forkline_es.values import (
    canonical_json,
    decode_value,
    decode_value_json,
    encode_value,
    encode_value_json,
)

from .equality import strictly_equal
from .strategies import python_values, typed_values

EXAMPLES = settings(max_examples=250, deadline=None)


@EXAMPLES
@given(python_values)
def test_decode_of_encode_gives_back_the_value_with_its_kinds(value: Any) -> None:
    assert strictly_equal(value, decode_value(encode_value(value)))


@EXAMPLES
@given(python_values)
def test_json_fast_path_matches_the_two_step_path_and_decodes_back(value: Any) -> None:
    stored = encode_value_json(value)
    assert stored == canonical_json(encode_value(value))
    assert strictly_equal(value, decode_value_json(stored))


@EXAMPLES
@given(typed_values)
def test_encode_of_decode_is_a_fixed_point(typed: dict[str, Any]) -> None:
    assert encode_value(decode_value(typed)) == typed
    # == on floats hides -0.0; the canonical bytes do not.
    assert canonical_json(encode_value(decode_value(typed))) == canonical_json(typed)


@EXAMPLES
@given(typed_values)
def test_stored_bytes_of_a_typed_value_survive_a_round_trip(typed: dict[str, Any]) -> None:
    stored = canonical_json(typed)
    assert encode_value_json(decode_value_json(stored)) == stored
    assert canonical_json(json.loads(stored)) == stored
