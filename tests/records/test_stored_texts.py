"""Stored run record texts (``records.stored``) on both backends: whatever follows a read,
a later read equals a fresh build byte for byte; an unusable stored text is never served;
a read-only store writes none; eviction, payload removal and gc delete them."""

from __future__ import annotations

import subprocess
import sys
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.projections import versions
from forkline_es.records import stored
from forkline_es.records.documents import document_text
from forkline_es.testing.backends import FreshStores


def _concluded(store: fe.Store, steps: int, status: str = "succeeded") -> str:
    run = store.start_run(workflow="texts", inputs={"n": steps})
    for i in range(steps):
        run.begin_step(f"s/{i}", arguments={"i": i})
        run.end_step(f"s/{i}", "succeeded", result={"i": i * i})
    run.conclude(status, outputs={"n": steps})
    return run.id


def built(store: fe.Store, run_id: str) -> bytes:
    """The document built from the projections, neither cache nor stored text asked."""
    with store.log.snapshot() as cur:
        summary = store.projections.persist.load_summary(cur, run_id)
        assert summary is not None
        return document_text(cur, store.projections.persist, summary).encode()


def texts(store: fe.Store, run_id: str) -> list[tuple[int, bytes]]:
    """The run's stored texts: (seq, inflated document or ``(damaged)``)."""
    rows = sql(store, "SELECT seq, text FROM record_text WHERE run_id = ? ORDER BY seq", (run_id,))
    return [(int(seq), _inflated(bytes(blob))) for seq, blob in rows]


def _inflated(blob: bytes) -> bytes:
    try:
        return zlib.decompress(blob)
    except zlib.error:
        return b"(damaged)"


def _pg(store: fe.Store) -> bool:
    return store.log.dialect.name == "postgresql"


def sql(store: fe.Store, statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """``statement`` (``?`` placeholders) on the store's own connection, committed."""
    if _pg(store):
        with store.conn.transaction():
            cur = store.conn.execute(statement.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []
    return store.conn.execute(statement, params).fetchall()


def last_seq(store: fe.Store, run_id: str) -> int:
    return int(sql(store, "SELECT max(seq) FROM log WHERE run_id = ?", (run_id,))[0][0])


ACTIONS = st.lists(
    st.sampled_from(["read", "export", "forget", "remove", "artifact", "observe", "gc", "corrupt"]),
    max_size=10,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.integers(0, 4), actions=ACTIONS, evict=st.booleans())
def test_any_read_after_any_event_equals_a_fresh_build(
    fresh_stores: FreshStores, steps: int, actions: list[str], evict: bool
) -> None:
    with fresh_stores.open() as store:
        run_id = _concluded(store, steps)
        removable = ["arguments", "results"]
        for n, action in enumerate(actions):
            if action in ("read", "export"):
                got = (
                    fe.canonical_json(store.get_run_record(run_id))
                    if action == "read"
                    else store.export_run_record(run_id)
                )
                assert got == built(store, run_id)
                # The first read stored the text for the run's last row, and only for it.
                assert [seq for seq, _ in texts(store, run_id)][-1:] == [last_seq(store, run_id)]
                assert texts(store, run_id)[-1][1] == got
            elif action == "forget":  # another process: nothing cached in memory
                store.documents.clear()
            elif action == "remove" and removable:
                if store.remove_payloads(run_id, [removable.pop()], reason="test"):
                    assert texts(store, run_id) == []  # the removed values are not kept in a text
            elif action == "artifact":
                store.resume_run(run_id).add_artifact(f"after {n}".encode(), "log")
            elif action == "observe":
                store.resume_run(run_id).observe(f"m{n}", n)
            elif action == "gc":
                store.gc()
                left = texts(store, run_id)
                assert all(seq == last_seq(store, run_id) for seq, _ in left)  # stale ones went
            elif action == "corrupt":
                sql(store, "UPDATE record_text SET text = ? WHERE run_id = ?", (b"not zlib", run_id))
                store.documents.clear()
        store.documents.clear()
        assert store.export_run_record(run_id) == built(store, run_id)
        if evict:
            store.evict_run(run_id, reason="test", force=True)
            assert texts(store, run_id) == []
            with pytest.raises(fe.RunNotRetained):
                store.get_run_record(run_id)


def test_a_stored_text_serves_a_later_first_read_without_building(
    fresh_stores: FreshStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fresh_stores.open() as store:
        run_id = _concluded(store, 3)
        first = store.export_run_record(run_id)
        assert texts(store, run_id) == [(last_seq(store, run_id), first)]
        store.documents.clear()
        from forkline_es.records import operations

        def no_build(*_: object) -> str:
            raise AssertionError("built although a stored text stands")

        monkeypatch.setattr(operations, "document_text", no_build)
        assert store.export_run_record(run_id) == first
        assert fe.canonical_json(store.get_run_record(run_id)) == first


@pytest.mark.parametrize(
    ("change", "params"),
    [
        ("UPDATE record_text SET text = ?", (zlib.compress(b'{"forged":true}', 1),)),  # size differs
        ("UPDATE record_text SET text = ?", (b"\x78\x01garbage",)),  # does not inflate
        ("UPDATE record_text SET size = size + 1", ()),
        ("UPDATE record_text SET digest = ?", ("sha256:" + "0" * 64,)),  # another digest
        ("UPDATE record_text SET format = format + 1", ()),  # another build's projectors
    ],
)
def test_an_unusable_stored_text_is_never_served_and_is_replaced(
    fresh_stores: FreshStores, change: str, params: tuple[Any, ...]
) -> None:
    with fresh_stores.open() as store:
        run_id = _concluded(store, 2)
        other = _concluded(store, 1)
        document = store.export_run_record(run_id)
        store.export_run_record(other)
        forged = b'{"forged":true}'
        if "digest" in change or "format" in change:  # a well-formed text it must not take
            sql(
                store,
                "UPDATE record_text SET size = ?, text = ? WHERE run_id = ?",
                (len(forged), zlib.compress(forged, 1), run_id),
            )
        sql(store, change + " WHERE run_id = ?", (*params, run_id))
        store.documents.clear()
        assert store.export_run_record(run_id) == document == built(store, run_id)
        store.documents.clear()
        assert store.export_run_record(run_id) == document
        assert [t for _, t in texts(store, run_id) if t != forged] == [document]  # stored anew
        assert texts(store, other) == [(last_seq(store, other), store.export_run_record(other))]


def test_a_read_only_store_reads_and_writes_no_text(fresh_stores: FreshStores) -> None:
    location = fresh_stores.location()
    with fresh_stores.open(location) as store:
        run_id = _concluded(store, 2)
        document = built(store, run_id)
    with fresh_stores.open(location, read_only=True) as reader:
        assert reader.export_run_record(run_id) == document
        assert fe.canonical_json(reader.get_run_record(run_id)) == document
    with fresh_stores.open(location) as store:
        assert texts(store, run_id) == []


def test_a_text_built_before_a_later_row_is_never_written(fresh_stores: FreshStores) -> None:
    """A read that built its text before a payload removal committed must not store it
    after: the removal deleted the run's texts, and this one holds the removed values."""
    with fresh_stores.open() as store:
        run_id = _concluded(store, 2)
        seq = last_seq(store, run_id)
        digest = str(sql(store, "SELECT digest FROM log WHERE run_id = ? AND seq = ?", (run_id, seq))[0][0])
        old = built(store, run_id)
        store.remove_payloads(run_id, ["results"], reason="test")
        fmt = versions.key_of(store.projections.versions)
        stored.save(store.log, run_id, (seq, digest, 0), fmt, old, False)
        assert texts(store, run_id) == []
        if _pg(store):  # the insert trigger holds the rule for any client
            sql(
                store,
                "INSERT INTO record_text (run_id, seq, digest, format, size, text) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, seq, digest, fmt, len(old), zlib.compress(old)),
            )
            assert texts(store, run_id) == []


#: An insert into record_text refused, as a role without the grant is (tests/postgres/test_roles.py
#: runs the documented grants).
REFUSE = {
    "sqlite": [
        "CREATE TRIGGER refuse BEFORE INSERT ON record_text BEGIN SELECT RAISE(ABORT, 'refused'); END",
    ],
    "postgresql": [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION 'refused' USING ERRCODE = 'insufficient_privilege'; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON record_text FOR EACH ROW EXECUTE FUNCTION refuse()",
    ],
}


def test_a_refused_insert_leaves_the_read_as_it_was(fresh_stores: FreshStores) -> None:
    with fresh_stores.open() as store:
        run_id = _concluded(store, 2)
        for statement in REFUSE[store.log.dialect.name]:
            sql(store, statement)
        assert store.export_run_record(run_id) == built(store, run_id)
        store.documents.clear()
        assert fe.canonical_json(store.get_run_record(run_id)) == built(store, run_id)
        assert texts(store, run_id) == []


def test_rebuild_and_check_of_the_projections_leave_the_texts(fresh_stores: FreshStores) -> None:
    with fresh_stores.open() as store:
        run_id = _concluded(store, 2)
        document = store.export_run_record(run_id)
        assert store.check_projections() == []
        store.rebuild_projections()
        assert texts(store, run_id) == [(last_seq(store, run_id), document)]
        store.documents.clear()
        assert store.export_run_record(run_id) == document


#: Reads every run again and again; between its snapshot and its save of a built text it
#: waits 20 ms, so that the other process's removals land in that window.
_READER = (
    "import sys, time, forkline_es as fe\n"
    "from forkline_es.records import operations, stored\n"
    "save = stored.save\n"
    "def late(*args):\n"
    "    time.sleep(0.02)\n"
    "    save(*args)\n"
    "operations.stored.save = late\n"
    "where, artifacts, n = sys.argv[1], sys.argv[2] or None, int(sys.argv[3])\n"
    "with fe.Store.open(where, artifacts=artifacts) as store:\n"
    "    print('ready', flush=True)\n"
    "    for _ in range(4):\n"
    "        for i in range(n):\n"
    "            store.documents.clear()\n"
    "            store.export_run_record(f'r{i}')\n"
)


def test_a_reader_process_racing_payload_removals_leaves_no_text_of_removed_values(
    fresh_stores: FreshStores,
) -> None:
    """Another process reads (and stores) the runs' texts while this one removes their
    values: afterwards every stored text is of its run's last row and equals a fresh build,
    so no text built before a removal outlived it."""
    location, runs = fresh_stores.location(), 12
    with fresh_stores.open(location) as store:
        for i in range(runs):
            run = store.start_run(workflow="texts", run_id=f"r{i}", inputs={"i": i})
            run.begin_step("s", arguments={"secret": i})
            run.end_step("s", "succeeded", result={"secret": i})
            run.conclude("succeeded")
        reader = subprocess.Popen(
            [sys.executable, "-c", _READER, location, fresh_stores.artifacts_for(location) or "", str(runs)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
            for i in range(runs):
                store.remove_payloads(f"r{i}", ["inputs"], reason="test")
                store.remove_payloads(f"r{i}", ["arguments", "results"], reason="test")
        finally:
            assert reader.wait(timeout=120) == 0
        for i in range(runs):
            run_id = f"r{i}"
            left = texts(store, run_id)
            assert all(seq == last_seq(store, run_id) for seq, _ in left), left
            assert all(text == built(store, run_id) for _, text in left)
            assert b'"secret"' not in b"".join(text for _, text in left)
