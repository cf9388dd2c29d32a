"""row_digest: any change to any header field or to any byte of the body changes it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from forkline_es.log.rows import row_digest

FIELDS = ("run_id", "seq", "entry", "generation", "kind", "at", "key", "prev", "body")

texts = st.text(max_size=20)
header = st.fixed_dictionaries(
    {
        "run_id": texts,
        "seq": st.integers(min_value=1, max_value=2**40),
        "entry": st.none() | st.integers(min_value=1, max_value=2**40),
        "generation": st.integers(min_value=0, max_value=2**20),
        "kind": texts,
        "at": texts,
        "key": texts,
        "prev": st.none() | texts,
        "body": st.binary(max_size=200),
    }
)
other_value = {
    "run_id": texts,
    "seq": st.integers(min_value=1, max_value=2**40),
    "entry": st.none() | st.integers(min_value=0, max_value=2**40),
    "generation": st.integers(min_value=0, max_value=2**20),
    "kind": texts,
    "at": texts,
    "key": texts,
    "prev": st.none() | texts,
    "body": st.binary(max_size=200),
}


def _digest(fields: dict[str, Any]) -> str:
    return row_digest(**fields)


@pytest.mark.parametrize("name", FIELDS)  # each field every run, not one drawn by chance
@given(header, st.data())
def test_changing_any_one_field_changes_the_digest(
    name: str, fields: dict[str, Any], data: st.DataObject
) -> None:
    new = data.draw(other_value[name])
    assume(new != fields[name])
    assert _digest({**fields, name: new}) != _digest(fields)


@given(header, st.data())
def test_changing_any_single_byte_of_the_body_changes_the_digest(
    fields: dict[str, Any], data: st.DataObject
) -> None:
    body: bytes = fields["body"]
    assume(body)
    i = data.draw(st.integers(min_value=0, max_value=len(body) - 1))
    flip = data.draw(st.integers(min_value=1, max_value=255))
    changed = body[:i] + bytes([body[i] ^ flip]) + body[i + 1 :]
    assert _digest({**fields, "body": changed}) != _digest(fields)


@given(header)
def test_a_str_body_hashes_as_its_utf8_bytes_and_the_form_is_fixed(fields: dict[str, Any]) -> None:
    text = fields["body"].decode("utf-8", errors="replace")
    digest = _digest({**fields, "body": text})
    assert digest == _digest({**fields, "body": text.encode()})
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest)


@given(header)
def test_moving_bytes_between_the_header_and_the_body_changes_the_digest(fields: dict[str, Any]) -> None:
    # the header is self-delimiting: a key that ends where the body begins is not the same row
    assume(fields["key"])
    moved = {**fields, "key": fields["key"][:-1], "body": fields["key"][-1].encode() + fields["body"]}
    assert _digest(moved) != _digest(fields)
