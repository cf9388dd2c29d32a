"""The per-payload size limit (decisions.md, "Added in the second round"): a payload whose
canonical JSON is longer than the store's ``max_payload_bytes`` (16 MiB by default) is
``invalid-value`` naming the slot, its size and the limit, and nothing is written."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
from forkline_es.recording.payloads import BODY_ALLOWANCE
from forkline_es.values import encode_value_json

from .helpers import ARTIFACT, snapshot

LIMIT = 300
STRING_OVERHEAD = len(encode_value_json(""))  # {"kind":"string","value":""}


def fits(limit: int = LIMIT) -> str:
    """A string whose typed canonical JSON is exactly ``limit`` bytes."""
    return "a" * (limit - STRING_OVERHEAD)


def over(limit: int = LIMIT) -> str:
    return "a" * (limit - STRING_OVERHEAD + 1)


def test_the_edge_strings_measure_what_they_claim() -> None:
    assert len(encode_value_json(fits())) == LIMIT
    assert len(encode_value_json(over())) == LIMIT + 1


# Each call records one payload slot; (slot, call) with the run fixture's handle.
CALLS: dict[str, Callable[[fe.Store, Any, Any], Any]] = {
    "inputs": lambda s, r, v: s.start_run("w", inputs=v),
    "trigger": lambda s, r, v: s.start_run("w", trigger=v),
    "arguments": lambda s, r, v: r.begin_step("b", arguments=v),
    "invoke arguments": lambda s, r, v: r.invoke("s", 1, "op", ARTIFACT, "not-dispatched", arguments=v),
    "result": lambda s, r, v: r.end_step("e", "skipped", result=v),
    "details": lambda s, r, v: r.end_step("e", "skipped", details=v),
    "binding": lambda s, r, v: r.end_step("e", "skipped", binding=v),
    "event": lambda s, r, v: r.end_step("e", "skipped", event=v),
    "outputs": lambda s, r, v: r.conclude("succeeded", outputs=v),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_exactly_the_limit_passes_one_byte_more_is_refused(db_path: Path, call: str) -> None:
    with fe.Store.open(db_path, max_payload_bytes=LIMIT) as store:
        run = store.start_run("w", run_id="r")
        before = snapshot(store)
        with pytest.raises(fe.InvalidValue) as refused:
            CALLS[call](store, run, over())
        slot = call.split()[-1]
        assert refused.value.path == f"$.{slot}"
        assert f"payload `{slot}` is {LIMIT + 1:,} bytes" in str(refused.value)
        assert f"limit of {LIMIT:,} bytes" in str(refused.value)
        assert snapshot(store) == before
        CALLS[call](store, run, fits())  # exactly the limit
        stored = store.conn.execute("SELECT max(length(value)) FROM payload").fetchall()[0][0]
        assert stored == LIMIT


def test_a_huge_container_is_refused_before_it_is_encoded(db_path: Path) -> None:
    with (
        fe.Store.open(db_path, max_payload_bytes=LIMIT) as store,
        pytest.raises(fe.InvalidValue, match=r"is \d+ bytes"),  # short: refused once encoded
    ):
        store.start_run("w", inputs=["x"] * 13)
    with fe.Store.open(db_path, max_payload_bytes=LIMIT) as store:
        with pytest.raises(fe.InvalidValue, match="is at least"):
            # long enough to be bounded before encoding (payloads.EARLY), over the limit by far
            store.start_run("w", inputs=["x"] * 5_000)
        assert store.list_runs() == []


def test_the_default_is_16_mib_and_a_larger_payload_is_refused_quickly(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        assert store.max_payload_bytes == 16 * 1024 * 1024
        run = store.start_run("w", run_id="r")
        before = snapshot(store)
        # The shape: 20 MB of short strings (186 MB typed); refused from its length.
        started = time.monotonic()
        with pytest.raises(fe.InvalidValue, match="over this store's limit of 16,777,216 bytes"):
            run.begin_step("s", arguments=["abcdefghi"] * 2_000_000)
        assert time.monotonic() - started < 5  # generous: no 186 MB encoding was built
        default = 16 * 1024 * 1024
        text = "a" * (default + 1 - len(encode_value_json({"text": ""})))
        with pytest.raises(fe.InvalidValue, match=f"is {default + 1:,} bytes"):
            run.begin_step("s", arguments={"text": text})
        assert snapshot(store) == before
        run.begin_step("s", arguments=fits(default))
        assert store.get_step_record("r", "s")["payloads"]["arguments"]["state"] == "present"


def test_event_fields_are_bounded_too(db_path: Path) -> None:
    with fe.Store.open(db_path, max_payload_bytes=LIMIT) as store:
        run = store.start_run("w", run_id="r")
        before = snapshot(store)
        with pytest.raises(fe.InvalidValue, match="run-held event's own fields"):
            run.hold(reason="x" * (LIMIT + BODY_ALLOWANCE))
        with pytest.raises(fe.InvalidValue, match="manifest-recorded event's own fields"):
            run.record_manifest(notes="x" * (LIMIT + BODY_ALLOWANCE))
        assert snapshot(store) == before


def test_the_recorder_measures_the_stored_plain_json(db_path: Path) -> None:
    with fe.RunRecorder(db_path, fe.RedactionPolicy.none(), max_payload_bytes=LIMIT) as recorder:
        run_id = recorder.start_run("e")
        before = snapshot(recorder.store)
        with pytest.raises(fe.InvalidValue) as refused:
            recorder.log_event(run_id, "t", "a" * (LIMIT - 1))  # quoted: LIMIT + 1 bytes
        assert refused.value.path == "$.payload" and f"{LIMIT + 1:,} bytes" in str(refused.value)
        assert snapshot(recorder.store) == before
        recorder.log_event(run_id, "t", "a" * (LIMIT - 2))
        assert recorder.get_events(run_id)[-1]["payload"] == "a" * (LIMIT - 2)


def test_the_importer_refuses_a_source_with_a_payload_over_the_limit(tmp_path: Path) -> None:
    source = tmp_path / "forkline.db"
    conn = sqlite3.connect(source)
    conn.executescript(
        "CREATE TABLE runs (run_id TEXT PRIMARY KEY, schema_version TEXT, forkline_version TEXT, "
        "entrypoint TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT, status TEXT, "
        "python_version TEXT NOT NULL, platform TEXT NOT NULL, cwd TEXT NOT NULL);"
        "CREATE TABLE events (event_id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
        "ts TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL);"
    )
    conn.execute(
        "INSERT INTO runs VALUES "
        "('r', '1.0', '0.5.0', 'a.py', '2026-01-01T00:00:00', NULL, NULL, '3', 'L', '/')"
    )
    for text in ('"small"', '"' + "a" * LIMIT + '"'):
        conn.execute(
            "INSERT INTO events (run_id, ts, type, payload) VALUES ('r', '2026-01-01T00:00:01', 't', ?)",
            (text,),
        )
    conn.commit()
    conn.close()
    with fe.Store.open(tmp_path / "new.db", max_payload_bytes=LIMIT) as store:
        with pytest.raises(fe.InvalidRequest, match=r"event 2 \(run r\): .*payload `payload` is 302 bytes"):
            fe.import_forkline(source, store, fe.RedactionPolicy.none())
        assert store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0] == 0


@pytest.mark.parametrize(
    "bad",
    [0, -1, True, 1.5, "16", None, 2**70, 10**5000, 1_000_000_001],
    ids=lambda v: type(v).__name__ + str(v)[:20] if not isinstance(v, int) or v < 10**30 else "huge",
)
def test_the_limit_is_checked_before_the_file_is_made(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(fe.InvalidRequest, match="max_payload_bytes is a number of bytes"):
        fe.Store.open(tmp_path / "x.db", max_payload_bytes=bad)
    assert not (tmp_path / "x.db").exists()
