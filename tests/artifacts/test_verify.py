"""verify: every kind of after-the-fact change is reported with its kind and seq; nothing is repaired."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.cli.main import main

from .helpers import kinds_at, record_sample, relink, row, untrigger

#: The module tampers with the store through SQLite's own connection (drops triggers,
#: rewrites rows and files) to show what verify finds; on PostgreSQL the triggers refuse
#: that client, and tests/postgres/test_triggers.py covers them.
pytestmark = pytest.mark.sqlite_only("tampers with a SQLite file through apsw to show what verify finds")


@pytest.fixture
def store(sqlite_store: fe.Store) -> fe.Store:
    return sqlite_store


@pytest.fixture
def sample(store: fe.Store, tmp_path: Path) -> fe.Run:
    run = record_sample(store, tmp_path)
    untrigger(store)
    return run


def _artifact(store: fe.Store, name: str) -> tuple[int, Path]:
    (seq, path), *_ = store.conn.execute(
        "SELECT seq, path FROM artifact WHERE run_id = 'r1' AND name = ?", (name,)
    ).fetchall()
    return int(seq), store.artifact_files.root / path


def _cli(db: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["verify", "--db", str(db), *args])
    return result.exit_code, result.output


def test_an_untouched_store_verifies_clean(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    report = store.verify_run(sample.id)
    assert report.ok and report.problems == ()
    assert (report.events, report.artifacts, report.manifests) == (10, 2, 1)
    assert _cli(db_path, sample.id)[0] == 0
    code, out = _cli(db_path, "--all")
    assert code == 0 and "verified 1 run: ok" in out


def test_a_flipped_artifact_byte_is_a_checksum_mismatch(
    sample: fe.Run, store: fe.Store, db_path: Path
) -> None:
    seq, path = _artifact(store, "trace.txt")
    data = bytearray(path.read_bytes())
    data[3] ^= 0x01
    path.write_bytes(bytes(data))
    report = store.verify_run(sample.id)
    assert kinds_at(report) == [("artifact-checksum", seq)]
    assert report.problems[0].actual != report.problems[0].expected
    assert path.read_bytes() == bytes(data)  # never repaired
    code, out = _cli(db_path, sample.id)
    assert code == 1 and "artifact-checksum" in out


def test_a_truncated_artifact_is_a_size_mismatch(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    seq, path = _artifact(store, f"report-{sample.id}.json")
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 5)
    report = store.verify_run(sample.id)
    assert kinds_at(report) == [("artifact-size", seq)]
    assert (report.problems[0].expected, report.problems[0].actual) == (size, size - 5)
    assert _cli(db_path, sample.id)[0] == 1


def test_a_deleted_artifact_is_missing(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    seq, path = _artifact(store, "trace.txt")
    path.unlink()
    assert kinds_at(store.verify_run(sample.id)) == [("artifact-missing", seq)]
    assert _cli(db_path, "--all")[0] == 1


def test_a_fifo_in_place_of_an_artifact_or_the_manifest_is_missing_not_waited_on(
    sample: fe.Run, store: fe.Store, db_path: Path
) -> None:
    """Opening a named pipe for reading waits for a writer that never comes: verify looks at
    what the path is before it reads, and a pipe is not the file that was recorded."""
    import os

    seq, path = _artifact(store, "trace.txt")
    path.unlink()
    os.mkfifo(path)
    ((manifest_seq, manifest),) = store.conn.execute(
        "SELECT seq, path FROM manifest WHERE run_id = 'r1'"
    ).fetchall()
    where = store.artifact_files.root / manifest
    where.unlink()
    os.mkfifo(where)
    assert kinds_at(store.verify_run(sample.id)) == [
        ("artifact-missing", seq),
        ("manifest-file-missing", manifest_seq),
    ]
    assert _cli(db_path, "--all")[0] == 1


def test_an_edited_body_breaks_the_chain_at_that_row(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    position, seq, body = row(store, "r1", "step-ended")
    store.conn.execute(
        "UPDATE log SET body = ? WHERE position = ?", (body.replace("succeeded", "failed"), position)
    )
    assert kinds_at(store.verify_run(sample.id)) == [("row-digest", seq)]
    code, out = _cli(db_path, sample.id, "--json")
    assert code == 1
    assert [(p["kind"], p["seq"]) for p in json.loads(out)["problems"]] == [("row-digest", seq)]


def test_an_edit_with_a_recomputed_digest_breaks_the_next_link(sample: fe.Run, store: fe.Store) -> None:
    from forkline_es.log.rows import row_digest

    position, seq, body = row(store, "r1", "step-ended")
    ((rid, s, entry, gen, kind, at, key, prev),) = store.conn.execute(
        "SELECT run_id, seq, entry, generation, kind, at, key, prev FROM log WHERE position = ?", (position,)
    ).fetchall()
    forged = body.replace("succeeded", "failed")
    digest = row_digest(rid, s, entry, gen, kind, at, key, prev, forged)
    store.conn.execute("UPDATE log SET body = ?, digest = ? WHERE position = ?", (forged, digest, position))
    assert kinds_at(store.verify_run(sample.id)) == [("chain-link", seq + 1)]


def test_two_swapped_rows_are_reported_at_both_seqs(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    for a, b in ((3, 1000), (4, 3), (1000, 4)):
        store.conn.execute("UPDATE log SET seq = ? WHERE run_id = 'r1' AND seq = ?", (b, a))
    found = kinds_at(store.verify_run(sample.id))
    assert ("row-digest", 3) in found and ("row-digest", 4) in found
    assert min(s for _, s in found) == 3
    assert _cli(db_path, sample.id)[0] == 1


def test_a_deleted_middle_row_is_a_gap_at_its_seq(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    position, seq, _ = row(store, "r1", "observed")
    store.conn.execute("DELETE FROM log WHERE position = ?", (position,))
    assert kinds_at(store.verify_run(sample.id)) == [("seq-gap", seq), ("chain-link", seq + 1)]
    assert _cli(db_path, sample.id)[0] == 1


def test_a_deleted_conclusion_is_seen_by_the_projections(
    sample: fe.Run, store: fe.Store, db_path: Path
) -> None:
    position, _, _ = row(store, "r1", "run-concluded")
    store.conn.execute("DELETE FROM payload WHERE position = ?", (position,))
    store.conn.execute("DELETE FROM log WHERE position = ?", (position,))
    report = store.verify_run(sample.id)
    assert {p.kind for p in report.problems} == {"projection-mismatch"}
    assert any("run_summary ('r1',)" in p.message and "succeeded" in p.message for p in report.problems)
    code, out = _cli(db_path, sample.id, "--json")
    assert code == 1 and "projection-mismatch" in out


def test_the_projection_check_can_be_skipped(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    position, _, _ = row(store, "r1", "run-concluded")
    store.conn.execute("DELETE FROM payload WHERE position = ?", (position,))
    store.conn.execute("DELETE FROM log WHERE position = ?", (position,))
    assert not store.verify_run(sample.id).ok
    assert store.verify_run(sample.id, projections=False).ok
    assert [r.ok for r in store.verify_all(projections=False)] == [True]
    assert [r.ok for r in store.verify_all()] == [False]
    assert _cli(db_path, sample.id, "--no-projections")[0] == 0
    assert _cli(db_path, "--all", "--no-projections")[0] == 0
    assert _cli(db_path, "--all")[0] == 1


def test_all_refolds_each_run_in_one_scratch_database(store: fe.Store, tmp_path: Path) -> None:
    """The shared scratch database is emptied between runs: no run's rows leak into the next."""
    for name in ("a", "b", "c"):
        record_sample(store, tmp_path, run_id=name)
    untrigger(store)
    position, _, _ = row(store, "b", "run-concluded")
    store.conn.execute("DELETE FROM payload WHERE position = ?", (position,))
    store.conn.execute("DELETE FROM log WHERE position = ?", (position,))
    assert {r.run_id: r.ok for r in store.verify_all()} == {"a": True, "b": False, "c": True}


def test_a_deleted_tail_of_an_active_run_is_seen_by_its_step_view(store: fe.Store) -> None:
    run = store.start_run("wf", run_id="live")
    run.begin_step("a")
    run.end_step("a", "succeeded", result=1)
    run.begin_step("b")
    run.end_step("b", "failed")
    untrigger(store)
    assert store.verify_run("live").ok
    store.conn.execute("DELETE FROM log WHERE run_id = 'live' AND seq = 5")  # b's end, no payload
    problems = store.verify_run("live").problems
    assert {p.kind for p in problems} == {"projection-mismatch"}
    assert any("step_view ('live', 'b')" in p.message for p in problems)


@pytest.mark.parametrize("kind", ["artifact-added", "observed"])
def test_a_deleted_tail_seen_only_by_an_extra_projection(store: fe.Store, kind: str) -> None:
    run = store.start_run("wf", run_id="tail")
    run.begin_step("a")
    run.end_step("a", "succeeded")
    if kind == "artifact-added":
        run.add_artifact(b"bytes", "blob", name="blob.bin")
    else:
        run.observe("loss", 0.5)
    untrigger(store)
    assert store.verify_run("tail").ok
    position, _, _ = row(store, "tail", kind)
    store.conn.execute("DELETE FROM log WHERE position = ?", (position,))
    problems = store.verify_run("tail").problems
    assert {p.kind for p in problems} == {"projection-mismatch"}
    table = "artifact" if kind == "artifact-added" else "observation"
    assert all(f"{table} (" in p.message and "refold has no such row" in p.message for p in problems)


def test_a_run_rewritten_to_its_end_is_seen_by_the_projections(sample: fe.Run, store: fe.Store) -> None:
    position, _, body = row(store, "r1", "step-ended")
    store.conn.execute(
        "UPDATE log SET body = ? WHERE position = ?", (body.replace("succeeded", "failed"), position)
    )
    relink(store, "r1")
    problems = store.verify_run(sample.id).problems
    assert {p.kind for p in problems} == {"projection-mismatch"}
    assert any("step_view ('r1', 'fetch')" in p.message for p in problems)
    entry = store.conn.execute("SELECT entry FROM log WHERE position = ?", (position,)).fetchall()[0][0]
    assert any(f"entry ('r1', {entry})" in p.message for p in problems)


def test_a_rebuild_after_tampering_makes_the_projections_agree_again(sample: fe.Run, store: fe.Store) -> None:
    """The comparison proves the rows and their projections agree, not that either is true."""
    position, _, _ = row(store, "r1", "run-concluded")
    store.conn.execute("DELETE FROM payload WHERE position = ?", (position,))
    store.conn.execute("DELETE FROM log WHERE position = ?", (position,))
    assert not store.verify_run(sample.id).ok
    store.rebuild_projections()
    assert store.verify_run(sample.id).ok


def test_a_changed_manifest_fact_is_reported(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    position, seq, body = row(store, "r1", "manifest-recorded")
    assert '"seed":7' in body
    store.conn.execute(
        "UPDATE log SET body = ? WHERE position = ?", (body.replace('"seed":7', '"seed":8'), position)
    )
    # the row, the facts' digest, and manifest.json (which still holds the true facts) disagree
    assert kinds_at(store.verify_run(sample.id)) == [
        ("row-digest", seq),
        ("manifest-digest", seq),
        ("manifest-file", seq),
    ]
    assert _cli(db_path, sample.id)[0] == 1


def test_a_changed_manifest_json_is_reported(sample: fe.Run, store: fe.Store, db_path: Path) -> None:
    _, seq, _ = row(store, "r1", "manifest-recorded")
    path = store.artifact_files.root / "runs" / "r1" / "manifest.json"
    path.write_bytes(path.read_bytes().replace(b'"seed":7', b'"seed":8'))
    report = store.verify_run(sample.id)
    assert kinds_at(report) == [("manifest-file", seq)]
    assert "facts hash to" in report.problems[0].message
    assert _cli(db_path, sample.id)[0] == 1
    path.unlink()
    assert kinds_at(store.verify_run(sample.id)) == [("manifest-file-missing", seq)]


def test_a_changed_payload_value_is_reported(sample: fe.Run, store: fe.Store) -> None:
    position, seq, _ = row(store, "r1", "step-begun")
    store.conn.execute(
        "UPDATE payload SET value = ? WHERE position = ? AND slot = 'arguments'",
        ('{"kind":"map","value":{}}', position),
    )
    assert kinds_at(store.verify_run(sample.id)) == [("payload-digest", seq)]


def test_a_payload_deleted_behind_the_triggers_is_missing(
    sample: fe.Run, store: fe.Store, db_path: Path
) -> None:
    """Not passed off as retention: no payloads-removed event names it."""
    position, seq, _ = row(store, "r1", "step-begun")
    store.conn.execute("DELETE FROM payload WHERE position = ? AND slot = 'arguments'", (position,))
    report = store.verify_run(sample.id)
    assert kinds_at(report) == [("payload-missing", seq)]
    assert report.problems[0].path == "arguments"
    assert _cli(db_path, sample.id)[0] == 1


def test_an_artifact_replaced_by_a_folder_is_missing_not_a_crash(
    sample: fe.Run, store: fe.Store, db_path: Path
) -> None:
    seq, path = _artifact(store, "trace.txt")
    path.unlink()
    path.mkdir()
    assert kinds_at(store.verify_run(sample.id)) == [("artifact-missing", seq)]
    code, out = _cli(db_path, sample.id)
    assert code == 1 and "artifact-missing" in out


def test_a_payload_removed_by_retention_is_not_a_problem(store: fe.Store, tmp_path: Path) -> None:
    run = record_sample(store, tmp_path)
    store.remove_payloads(run.id)
    report = store.verify_run(run.id)
    assert report.ok, report.problems


def test_a_run_whose_rows_all_vanished_is_reported_by_all(
    sample: fe.Run, store: fe.Store, db_path: Path
) -> None:
    store.conn.execute("DELETE FROM payload")
    store.conn.execute("DELETE FROM log WHERE run_id = 'r1'")
    reports = store.verify_all()
    assert [(r.run_id, kinds_at(r)) for r in reports] == [("r1", [("run-missing", None)])]
    assert _cli(db_path, "--all")[0] == 1


def test_refusals_exit_2(store: fe.Store, db_path: Path) -> None:
    with pytest.raises(fe.RunNotFound):
        store.verify_run("nope")
    assert _cli(db_path, "nope")[0] == 2
    assert _cli(db_path)[0] == 2
    assert _cli(db_path, "r", "--all")[0] == 2


def test_a_run_and_all_together_is_a_usage_error(sample: fe.Run, db_path: Path) -> None:
    """Refused even for a run that exists (an unknown one would exit 2 anyway)."""
    result = CliRunner().invoke(main, ["verify", "--db", str(db_path), sample.id, "--all"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "error: give one RUN, or --all (not both); `forkline-es runs` lists the runs\n"


def _good_and_bad(store: fe.Store, tmp_path: Path) -> int:
    """Runs "good" and "bad", whose trace artifact file is gone; the seq of that artifact."""
    record_sample(store, tmp_path, run_id="good")
    record_sample(store, tmp_path, run_id="bad")
    (seq, path), *_ = store.conn.execute(
        "SELECT seq, path FROM artifact WHERE run_id = 'bad' AND name = 'trace.txt'"
    ).fetchall()
    (store.artifact_files.root / path).unlink()
    return int(seq)


def test_all_as_text_prints_each_failed_run_s_problems_at_their_seq(
    store: fe.Store, tmp_path: Path, db_path: Path
) -> None:
    seq = _good_and_bad(store, tmp_path)
    code, out = _cli(db_path, "--all")
    lines = out.splitlines()
    assert code == 1 and lines[0] == "run bad: 1 problem"
    assert lines[1].startswith(f"  seq {seq}  artifact-missing  ")
    assert lines[2:] == ["verified 2 runs: 1 with problems"]


# -- the property: any single-byte change of any body breaks the chain at that event ---------


@pytest.fixture(scope="module")
def chain(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[fe.Store, list[tuple[int, int, bytes]]]]:
    tmp = tmp_path_factory.mktemp("chain")
    with fe.Store.open(":memory:") as store:
        run = record_sample(store, tmp)
        untrigger(store)
        rows = [
            (int(p), int(s), str(b).encode())
            for p, s, b in store.conn.execute(
                "SELECT position, seq, body FROM log WHERE run_id = ? ORDER BY seq", (run.id,)
            )
        ]
        yield store, rows


@given(data=st.data())
def test_any_single_byte_change_in_a_body_breaks_the_chain_there(
    chain: tuple[fe.Store, list[tuple[int, int, bytes]]], data: st.DataObject
) -> None:
    store, rows = chain
    position, seq, body = data.draw(st.sampled_from(rows))
    at = data.draw(st.integers(0, len(body) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != body[at]))
    changed = body[:at] + bytes([byte]) + body[at + 1 :]
    try:
        value: str | bytes = changed.decode()
    except UnicodeDecodeError:
        value = changed  # not UTF-8 any more: stored as a BLOB, still caught
    store.conn.execute("UPDATE log SET body = ? WHERE position = ?", (value, position))
    try:
        found = kinds_at(store.verify_run("r1"))
    finally:
        store.conn.execute("UPDATE log SET body = ? WHERE position = ?", (body.decode(), position))
    assert ("row-digest", seq) in found
    assert all(s is not None and s >= seq for _, s in found)  # nothing before it is blamed


def test_all_as_json_lists_only_the_failed_runs(store: fe.Store, tmp_path: Path, db_path: Path) -> None:
    _good_and_bad(store, tmp_path)
    code, out = _cli(db_path, "--all", "--json")
    doc = json.loads(out)
    assert code == 1
    assert (doc["ok"], doc["runs"], doc["failed"]) == (False, 2, 1)
    assert [r["run_id"] for r in doc["reports"]] == ["bad"]
    assert [p["kind"] for p in doc["reports"][0]["problems"]] == ["artifact-missing"]


# Not a hold with its resume: together they leave the summary as it was, so deleting both
# leaves no trace (docs/verify.md says so).
_OPS = st.sampled_from(["step", "action", "artifact", "observe", "manifest"])


@given(ops=st.lists(_OPS, min_size=1, max_size=8), conclude=st.booleans(), data=st.data())
def test_any_deleted_tail_of_folded_events_is_a_projection_mismatch(
    ops: list[str], conclude: bool, data: st.DataObject
) -> None:
    """Every event these runs record changes some per-run projection row, so deleting any
    suffix of the run (payload values with it, the chain left valid) is seen, and nothing else
    is reported: the rows that remain are intact."""
    with fe.Store.open(":memory:") as store:
        run = store.start_run("wf", run_id="r", inputs={"n": 0})
        if ops.count("manifest") > 1:  # one manifest per run
            first = ops.index("manifest")
            ops = [op if op != "manifest" or n == first else "step" for n, op in enumerate(ops)]
        for n, op in enumerate(ops):
            path = f"p{n}"
            if op == "step":
                run.begin_step(path, arguments={"n": n})
                run.end_step(path, "succeeded", result=n)
            elif op == "action":
                run.begin_step(path)
                run.invoke(path, 1, "op", "sha256:" + "a" * 64, "not-dispatched", arguments=[n])
                run.result(path, 1, "succeeded", result={"n": n})
                run.end_step(path, "succeeded")
            elif op == "artifact":
                run.add_artifact(f"bytes {n}".encode(), "blob", name=f"b{n}.bin")
            elif op == "observe":
                run.observe(f"m{n}", n / 2)
            else:
                run.record_manifest(config={"n": n}, git_commit="0" * 40, packages=[])
        if conclude:
            run.conclude("succeeded")
        untrigger(store)
        assert store.verify_run("r").ok
        seqs = [s for (s,) in store.conn.execute("SELECT seq FROM log WHERE run_id = 'r' ORDER BY seq")]
        cut = data.draw(st.integers(2, len(seqs)), label="first deleted seq")
        store.conn.execute(
            "DELETE FROM payload WHERE position IN "
            "(SELECT position FROM log WHERE run_id = 'r' AND seq >= ?)",
            (cut,),
        )
        store.conn.execute("DELETE FROM log WHERE run_id = 'r' AND seq >= ?", (cut,))
        problems = store.verify_run("r").problems
        assert problems and {p.kind for p in problems} == {"projection-mismatch"}
