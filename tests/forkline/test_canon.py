"""``canon``, ``sha256_hex``, ``bytes_preview``: Forkline 0.5.0's exact bytes.

The expected values were produced by Forkline 0.5.0 itself (``pip install forkline==0.5.0``)
for these inputs; the properties hold for any input.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forkline_es.forkline import canon, sha256_hex
from forkline_es.forkline.core.canon import bytes_preview

OBSERVED = [
    ({"b": 1, "a": [1.0, -0.0, float("nan"), float("inf"), float("-inf")]},
     b'{"a":[1.0,0.0,"NaN","Infinity","-Infinity"],"b":1}'),
    ("a\r\nb\rc", b"a\nb\nc"),
    ("e\u0301", "\u00e9".encode()),
    (b"\x00raw", b"\x00raw"),
    ({1: "x"}, b'{"1":"x"}'),
    (1e21, b"1e+21"),
    (1.5e-7, b"1.5e-07"),
    (2**70, b"1180591620717411303424"),
    ({"k": b"xy"}, b'{"k":{"__bytes__":true,"length":2,"sha256":"'
     + hashlib.sha256(b"xy").hexdigest().encode() + b'"}}'),
    ({"t": (1, "√")}, '{"t":[1,"√"]}'.encode()),
    (None, b"null"),
    ({"o": object}, b"{\"o\":\"<class 'object'>\"}"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "expected"), OBSERVED)
def test_canon_gives_forkline_0_5_0s_bytes(value: Any, expected: bytes) -> None:
    assert canon(value) == expected


def test_sha256_hex_is_bare_hex_and_bytes_preview_prefixes_it() -> None:
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert bytes_preview(b"hello", 2) == (
        "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824:6865"
    )
    assert bytes_preview(b"hi") == f"sha256:{sha256_hex(b'hi')}:6869"


def test_an_unknown_profile_is_refused() -> None:
    with pytest.raises(ValueError, match="strict"):
        canon({}, profile="loose")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=15,
)


@given(json_values)
def test_canon_ignores_map_order_and_is_compact_json(value: Any) -> None:
    def reverse(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    data = canon(value)
    assert data == canon(reverse(value))
    if not isinstance(value, str):
        assert canon(json.loads(data)) == data  # valid JSON, and already canonical
