"""Integers of any size are values (decisions.md): beyond Python's 4,300-digit int <-> str
limit they are recorded, read and exported exactly, and the process-wide limit is untouched."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.values import canonical_json, decode_json, decode_value_json, encode_value_json
from forkline_es.values._bigint import int_from_text, int_text

BIG = -(7**6000)  # 5,071 digits: over the default limit


def digits_of(n: int) -> str:
    """Reference decimal text computed without int -> str (repeated divmod by 10**500)."""
    sign, n = ("-", -n) if n < 0 else ("", n)
    chunks = []
    while n >= 10**500:
        n, low = divmod(n, 10**500)
        chunks.append(str(low).zfill(500))
    return sign + str(n) + "".join(reversed(chunks))


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=30_000), st.booleans(), st.integers(min_value=0, max_value=10))
def test_int_text_is_exact_for_any_size(bits: int, negative: bool, low: int) -> None:
    n = (1 << bits) - low
    n = -n if negative else n
    text = int_text(n)
    assert text == digits_of(n)
    assert int_from_text(text) == n


def test_the_process_wide_limit_is_not_changed() -> None:
    before = sys.get_int_max_str_digits()
    canonical_json(BIG)
    decode_json(canonical_json([BIG]))
    assert sys.get_int_max_str_digits() == before


def test_typed_and_canonical_json_carry_big_integers() -> None:
    value = {"n": BIG, "list": [BIG, 1, 2**64], "d": fe.Duration(-BIG)}
    data = encode_value_json(value)
    assert f'{{"kind":"int","value":{digits_of(BIG)}}}'.encode() in data
    assert decode_value_json(data) == value
    assert canonical_json([BIG]) == f"[{digits_of(BIG)}]".encode()
    assert decode_json(canonical_json({"a": [BIG]})) == {"a": [BIG]}


def test_a_store_records_and_reads_big_integers(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run("w", inputs={"n": BIG}, run_id="big")
        run.begin_step("s", arguments=[BIG])
        run.end_step("s", "succeeded", result=BIG)
        run.conclude("succeeded", outputs={"n": BIG})
        record = store.get_run_record("big")
        assert record["payloads"]["inputs"]["value"]["value"]["n"]["value"] == BIG
        step = store.get_step_record("big", "s")
        assert step["payloads"]["arguments"]["value"] == fe.encode_value([BIG])
        assert digits_of(BIG).encode() in store.export_run_record("big")
        assert store.verify_run("big").ok
        assert store.check_projections() == []


def test_the_recorder_logs_and_reads_big_integers(db_path: Path) -> None:
    with fe.RunRecorder(db_path, fe.RedactionPolicy.none()) as recorder:
        run_id = recorder.start_run("e")
        recorder.log_event(run_id, "t", {"a": [BIG]})
        assert recorder.get_events(run_id)[0]["payload"] == {"a": [BIG]}


@pytest.mark.parametrize("text", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000])
def test_too_deep_json_is_a_decode_error_not_a_recursion_error(text: bytes) -> None:
    import msgspec

    with pytest.raises(msgspec.DecodeError, match="nested too deeply"):
        decode_json(text)
    with pytest.raises(fe.InvalidValue):
        decode_value_json(text)
