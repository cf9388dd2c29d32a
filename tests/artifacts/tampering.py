"""Consistent rewrites of a recorded run: each edits rows, values or files around the triggers,
then recomputes everything that would give it away (slot digests, the manifest digest and
manifest.json, every row digest and link after it). ``CASES`` maps a name to the edit."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import forkline_es as fe
from forkline_es.artifacts.manifest import Manifest, manifest_file_bytes
from forkline_es.log.events import ManifestRecorded
from forkline_es.values import sha256_digest
from forkline_es.values._time import canonical_timestamp, parse_canonical_timestamp

from .helpers import COMMIT, DEFINITION, relink, untrigger

RUN = "t"


def record_history(store: fe.Store, run_id: str = RUN) -> fe.Run:
    """Two steps with an action each (a hold and resume between them), an artifact, a manifest,
    an observation and a conclusion with outputs: 16 rows."""
    run = store.start_run("wf", inputs={"n": 1}, pins={"definition": DEFINITION}, run_id=run_id)
    for path, n in (("a", 1), ("b", 2)):
        run.begin_step(path, arguments={"n": n})
        run.invoke(path, 1, "http.get", "sha256:" + "a" * 64, "not-dispatched", arguments=[n])
        run.result(path, 1, "succeeded", result={"status": 200 + n})
        run.end_step(path, "succeeded", result=n)
        if path == "a":
            run.hold(code="review", reason="needs a human")
            run.resume()
    run.add_artifact(b"trace bytes", "trace", name="trace.txt")
    run.record_manifest(config={"lr": 0.1}, git_commit=COMMIT, seed=7)
    run.observe("latency_ms", 12.5, unit="ms")
    run.conclude("succeeded", outputs={"done": True})
    return run


# -- primitives: each leaves the chain to ``relink`` ------------------------------------------


def _seq(store: fe.Store, kind: str, nth: int = 0) -> int:
    seqs = [
        int(s)
        for (s,) in store.conn.execute(
            "SELECT seq FROM log WHERE run_id = ? AND kind = ? ORDER BY seq", (RUN, kind)
        )
    ]
    return seqs[nth]


def _position(store: fe.Store, seq: int) -> int:
    ((position,),) = store.conn.execute(
        "SELECT position FROM log WHERE run_id = ? AND seq = ?", (RUN, seq)
    ).fetchall()
    return int(position)


def _set(store: fe.Store, seq: int, column: str, value: Any) -> None:
    store.conn.execute(f"UPDATE log SET {column} = ? WHERE run_id = ? AND seq = ?", (value, RUN, seq))


def _edit_body(store: fe.Store, seq: int, change: Callable[[dict[str, Any]], None]) -> None:
    ((body,),) = store.conn.execute(
        "SELECT body FROM log WHERE run_id = ? AND seq = ?", (RUN, seq)
    ).fetchall()
    event = json.loads(body)
    change(event)
    _set(store, seq, "body", fe.canonical_json(event).decode())


def _value(store: fe.Store, seq: int, slot: str) -> Any:
    ((value,),) = store.conn.execute(
        "SELECT value FROM payload WHERE position = ? AND slot = ?", (_position(store, seq), slot)
    ).fetchall()
    return fe.decode_value(json.loads(value))


def _set_value(store: fe.Store, seq: int, slot: str, value: Any) -> None:
    """Store ``value`` in the slot and its digest in the event, as the recorder would have."""
    encoded = fe.canonical_json(fe.encode_value(value))
    store.conn.execute(
        "UPDATE payload SET value = ? WHERE position = ? AND slot = ?",
        (encoded.decode(), _position(store, seq), slot),
    )

    def digest(event: dict[str, Any]) -> None:
        event["slots"][slot]["digest"] = sha256_digest(encoded)

    _edit_body(store, seq, digest)


def _swap_values(store: fe.Store, kind: str, slot: str) -> None:
    first, second = _seq(store, kind, 0), _seq(store, kind, 1)
    a, b = _value(store, first, slot), _value(store, second, slot)
    _set_value(store, first, slot, b)
    _set_value(store, second, slot, a)


def _field(kind: str, name: str, value: Any, nth: int = 0) -> Callable[[fe.Store], None]:
    def edit(store: fe.Store) -> None:
        _edit_body(store, _seq(store, kind, nth), lambda e: e.__setitem__(name, value))

    return edit


def _delete(store: fe.Store, seq: int) -> None:
    position = _position(store, seq)
    store.conn.execute("DELETE FROM payload WHERE position = ?", (position,))
    store.conn.execute("DELETE FROM log WHERE position = ?", (position,))


# -- the rewrites -------------------------------------------------------------------------------


def invoke_arguments_swapped(store: fe.Store) -> None:
    _swap_values(store, "action-invoked", "arguments")


def result_values_swapped(store: fe.Store) -> None:
    _swap_values(store, "action-result", "result")


def final_result_value(store: fe.Store) -> None:
    _set_value(store, _seq(store, "action-result", 1), "result", {"status": 500})


def conclusion_outputs(store: fe.Store) -> None:
    _set_value(store, _seq(store, "run-concluded"), "outputs", {"done": False})


def middle_timestamp(store: fe.Store) -> None:
    """The second invoke dated a minute earlier."""
    seq = _seq(store, "action-invoked", 1)
    ((at,),) = store.conn.execute("SELECT at FROM log WHERE run_id = ? AND seq = ?", (RUN, seq)).fetchall()
    earlier = parse_canonical_timestamp(str(at)) - timedelta(minutes=1)
    _set(store, seq, "at", canonical_timestamp(earlier))


def idempotency_key(store: fe.Store) -> None:
    _set(store, _seq(store, "action-invoked", 1), "key", "invoke:0:b:1:forged")


def step_arguments(store: fe.Store) -> None:
    _set_value(store, _seq(store, "step-begun", 1), "arguments", {"n": 99})


def run_inputs(store: fe.Store) -> None:
    _set_value(store, 1, "inputs", {"n": 99})


def step_result(store: fe.Store) -> None:
    _set_value(store, _seq(store, "step-ended", 1), "result", 99)


def environment(store: fe.Store) -> None:
    _edit_body(store, 1, lambda e: e["env"].__setitem__("hostname", "elsewhere"))


def artifact_content(store: fe.Store) -> None:
    """Other bytes in a file of their own (content is shared between runs), described as recorded."""
    forged = b"forged trace"
    relative = "objects/forged.bin"
    (store.artifact_files.root / relative).write_bytes(forged)

    def describe(event: dict[str, Any]) -> None:
        event["path"], event["sha256"], event["size_bytes"] = relative, sha256_digest(forged), len(forged)

    _edit_body(store, _seq(store, "artifact-added"), describe)


def manifest_fact(store: fe.Store) -> None:
    seq = _seq(store, "manifest-recorded")

    def forge(event: dict[str, Any]) -> None:
        event["facts"]["seed"] = 8
        event["digest"] = sha256_digest(fe.canonical_json(event["facts"]))

    _edit_body(store, seq, forge)
    (row,) = [r for r in store.log.read_run(RUN) if r.seq == seq]
    event = row.event()
    assert isinstance(event, ManifestRecorded) and event.path is not None
    manifest = Manifest(event.facts, event.digest, event.unknown_fields, event.complete)
    (store.artifact_files.root / event.path).write_bytes(manifest_file_bytes(RUN, manifest))


def tail_deleted(store: fe.Store) -> None:
    _delete(store, _seq(store, "run-concluded"))


def middle_row_deleted(store: fe.Store) -> None:
    """The second step's invoke and result go, and every later row moves up to close the gap."""
    for kind in ("action-result", "action-invoked"):
        gone = _seq(store, kind, 1)
        ((entry,),) = store.conn.execute(
            "SELECT entry FROM log WHERE run_id = ? AND seq = ?", (RUN, gone)
        ).fetchall()
        _delete(store, gone)
        later = store.conn.execute(
            "SELECT seq FROM log WHERE run_id = ? AND seq > ? ORDER BY seq", (RUN, gone)
        ).fetchall()
        for (seq,) in later:
            store.conn.execute(
                "UPDATE log SET seq = seq - 1, entry = CASE WHEN entry > ? THEN entry - 1 ELSE entry END "
                "WHERE run_id = ? AND seq = ?",
                (entry, RUN, seq),
            )


def refolded(edit: Callable[[fe.Store], None]) -> Callable[[fe.Store], None]:
    """``edit``, then the projections refolded from the edited rows (``rebuild``)."""

    def both(store: fe.Store) -> None:
        edit(store)
        relink(store, RUN)
        store.rebuild_projections()

    return both


def run_deleted(store: fe.Store) -> None:
    """Every row and value of the run, and its projection rows."""
    store.conn.execute(
        "DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = ?)", (RUN,)
    )
    store.conn.execute("DELETE FROM log WHERE run_id = ?", (RUN,))
    store.rebuild_projections()


CASES: dict[str, Callable[[fe.Store], None]] = {
    "invoke-arguments-swapped": invoke_arguments_swapped,
    "result-values-swapped": result_values_swapped,
    "final-result-value": final_result_value,
    "conclusion-outputs": conclusion_outputs,
    "middle-timestamp": middle_timestamp,
    "idempotency-key": idempotency_key,
    "hold-reason": _field("run-held", "reason", "routine"),
    "hold-code": _field("run-held", "code", "routine"),
    "step-arguments": step_arguments,
    "run-inputs": run_inputs,
    "step-result": step_result,
    "environment": environment,
    "step-outcome": _field("step-ended", "outcome", "failed", nth=1),
    "conclusion-status": _field("run-concluded", "status", "failed"),
    "operation": _field("action-invoked", "operation", "http.post", nth=1),
    "dispatch": _field("action-result", "dispatch", "failed", nth=1),
    "artifact-content": artifact_content,
    "manifest-fact": manifest_fact,
    "observation-value": _field("observed", "value", 1.5),
    "tail-deleted": tail_deleted,
    "middle-rows-deleted": middle_row_deleted,
    "status-rewritten-and-refolded": refolded(_field("run-concluded", "status", "failed")),
    "run-deleted": run_deleted,
}


def tamper(store: fe.Store, case: str) -> None:
    """Apply ``CASES[case]`` around the triggers and recompute the run's chain after it."""
    untrigger(store)
    CASES[case](store)
    relink(store, RUN)
