"""A refused payload is named by where, never by its map keys' text: a key may be the secret.

The refusal's message reaches the caller's exception, its log and the ``refused`` structlog
event; none of them may carry a key of the refused value. Keys are named by position
(``<key 1>``: the map's second key), list elements by index.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe

SECRET = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
#: Keys no default pattern recognises as secrets: a refusal must not quote them either.
PLAIN_SECRET = "hunter2-correct-horse-battery"

BAD_LEAVES: list[Any] = [math.nan, math.inf, b"bytes", {1, 2}, object(), "\ud800"]


def _refused_payloads(key: str) -> list[tuple[Any, str]]:
    """(payload, its refusal path) with ``key`` on the way to the bad element, or as it."""
    cases: list[tuple[Any, str]] = [
        ({"ok": 1, key: math.nan}, "$<key 1>"),
        ({"ok": [0, {"n": 1, key: {"deep": math.inf}}]}, "$<key 0>[1]<key 1><key 0>"),
        ([{key: [b"x"]}], "$[0]<key 0>[0]"),
        ({key: {1: "non-string key"}}, "$<key 0><key 0>"),
        ({"a": 1, key + "\ud800": 1}, "$<key 1>"),  # the key itself is refused
    ]
    return cases


@pytest.mark.parametrize("key", [SECRET, PLAIN_SECRET])
def test_the_exception_and_the_log_event_name_positions_not_keys(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    caplog.set_level(logging.INFO, logger="forkline_es")
    with fe.Store.open(tmp_path / "runs.db") as store:
        run = store.start_run(workflow="w", run_id="r")
        run.begin_step("a")
        for payload, path in _refused_payloads(key):
            caplog.clear()
            with pytest.raises(fe.InvalidValue) as refused:
                run.invoke("a", 1, "op", "sha256:" + "0" * 64, "not-dispatched", arguments=payload)
            assert refused.value.path == "$.arguments" + path[1:]
            events = [r.getMessage() for r in caplog.records if '"refused"' in r.getMessage()]
            assert len(events) == 1 and path[1:] in events[0]
            for text in (str(refused.value), refused.value.message, repr(refused.value), *events):
                assert key not in text and key[:12] not in text
            with pytest.raises(fe.InvalidValue) as refused:
                store.start_run(workflow="w", inputs=payload)
            assert refused.value.path == "$.inputs" + path[1:] and key[:12] not in str(refused.value)
        assert store.get_run_record("r")["steps"]["a"]["status"] == "active"  # nothing was recorded


@pytest.mark.parametrize("key", [SECRET, PLAIN_SECRET])
def test_the_recorder_and_the_redaction_walk_name_positions_not_keys(tmp_path: Path, key: str) -> None:
    hashing = fe.RedactionPolicy([fe.RedactionRule(action="hash", key="v")])
    with fe.RunRecorder(tmp_path / "runs.db", fe.RedactionPolicy.none()) as recorder:
        run_id = recorder.start_run("x.py")
        for payload, path in _refused_payloads(key):
            with pytest.raises(fe.InvalidValue) as refused:
                recorder.log_event(run_id, "input", payload)
            assert refused.value.path == path and key[:12] not in str(refused.value)
        assert recorder.get_events(run_id) == []
    with pytest.raises(fe.InvalidValue) as refused:
        hashing.redact({"a": [{key: {"v": [0, math.nan]}}]})
    assert refused.value.path == "$<key 0>[0]<key 0><key 0>[1]" and key[:12] not in str(refused.value)
    cycle: dict[str, Any] = {}
    cycle[key] = cycle
    with pytest.raises(fe.InvalidValue) as refused:
        fe.RedactionPolicy.none().redact({"c": cycle})
    assert refused.value.path.startswith("$<key 0><key 0><key 0>") and key[:12] not in str(refused.value)


KEYS = st.text(max_size=20).map(lambda k: "\u2603" + k)  # a snowman: in no refusal message


@settings(max_examples=50, deadline=None)
@given(keys=st.lists(KEYS, min_size=1, max_size=4, unique=True), leaf=st.sampled_from(BAD_LEAVES))
def test_no_refusal_quotes_a_key_of_the_value(keys: list[str], leaf: Any) -> None:
    value: Any = leaf
    for key in keys:
        value = {"x": 0, key: [value]}
    default = fe.RedactionPolicy.default()
    for name, refuse in (
        ("encode", fe.encode_value),
        ("canonical", fe.canonical_json),
        ("redact", default.redact),
    ):
        try:
            refuse(value)
        except fe.InvalidValue as refused:
            assert "\u2603" not in str(refused)
            assert refused.path.count("<key 1>") == len(keys) or "surrogate" in refused.message
        else:
            assert name == "redact"  # redaction refuses only what it cannot walk or hash
