"""Too deep a value is a coded refusal from the redaction walk, never a RecursionError."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
from forkline_es.redaction import RedactionPolicy
from forkline_es.values._canonical import MAX_JSON_DEPTH

DEFAULT = RedactionPolicy.default()


def nested(levels: int, leaf: object = "leaf") -> Any:
    """``levels`` maps and lists inside each other, alternately, around ``leaf``."""
    value = leaf
    for i in range(levels):
        value = {"a": value} if i % 2 else [value]
    return value


def canonical_refusal(value: object) -> fe.InvalidValue:
    with pytest.raises(fe.InvalidValue) as info:
        fe.canonical_json(value)
    return info.value


WALKS: dict[str, Callable[[RedactionPolicy, object], object]] = {
    "redact": RedactionPolicy.redact,
    "is_sensitive": RedactionPolicy.is_sensitive,
    "sensitive_paths": RedactionPolicy.sensitive_paths,
}


@pytest.mark.parametrize("walk", list(WALKS.values()), ids=list(WALKS))
@pytest.mark.parametrize("policy", [DEFAULT, RedactionPolicy.none()], ids=["default", "none"])
def test_the_walk_refuses_what_canonical_json_refuses_with_the_same_error(
    walk: Callable[[RedactionPolicy, object], object], policy: RedactionPolicy
) -> None:
    for levels in (MAX_JSON_DEPTH + 1, 5000):
        value = {"ok": 1, "deep": nested(levels)}
        with pytest.raises(fe.InvalidValue) as info:
            walk(policy, value)
        expected = canonical_refusal(value)
        assert info.value.code == "invalid-value"
        assert (info.value.reason, info.value.path) == (expected.reason, expected.path)


@pytest.mark.parametrize("walk", list(WALKS.values()), ids=list(WALKS))
def test_as_deep_as_canonical_json_allows_is_walked(
    walk: Callable[[RedactionPolicy, object], object],
) -> None:
    value = nested(MAX_JSON_DEPTH, "Bearer 9f8a7b6c5d4e3f2a1b0c")
    fe.canonical_json(value)  # within the limit
    walk(DEFAULT, value)
    assert DEFAULT.is_sensitive(value)


def test_a_cycle_is_refused() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(fe.InvalidValue) as info:
        DEFAULT.redact({"c": [cycle]})
    assert info.value.path.startswith("$<key 0>[0]<key 0><key 0><key 0>")


def test_the_recorder_refuses_a_deep_payload_and_writes_nothing(db_path: Path) -> None:
    with fe.RunRecorder(db_path) as r:
        run_id = r.start_run("x.py")
        (before,) = r.store.conn.execute("SELECT count(*) FROM log").fetchone()
        with pytest.raises(fe.InvalidValue) as info:
            r.log_event(run_id, "input", {"deep": nested(2000)})
        assert info.value.code == "invalid-value"
        assert info.value.path.startswith("$<key 0><key 0>[0]<key 0>[0]<key 0>")
        assert r.store.conn.execute("SELECT count(*) FROM log").fetchone() == (before,)
        assert r.get_events(run_id) == []
        r.log_event(run_id, "input", {"after": 1})  # the recorder is still usable
        assert [e["payload"] for e in r.get_events(run_id)] == [{"after": 1}]


def test_the_executor_refuses_a_deep_payload_and_writes_nothing(db_path: Path) -> None:
    with fe.Store.open(db_path, redaction=DEFAULT) as store:
        with pytest.raises(fe.InvalidValue) as info:
            store.start_run(workflow="w", inputs={"deep": nested(2000)})
        assert info.value.code == "invalid-value"
        assert info.value.path.startswith("$.inputs<key 0><key 0>[0]")  # the slot named, as for encoding
        assert store.conn.execute("SELECT count(*) FROM log").fetchone() == (0,)
