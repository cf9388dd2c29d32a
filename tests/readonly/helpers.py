"""What the read-only tests share: a recorded store, a picture of a folder, every write call."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import forkline_es as fe
from forkline_es.testing.histories import ARTIFACT

#: The reads a read-only store answers, each as JSON-able data (the worker prints them).
READS: dict[str, Callable[[fe.Store], Any]] = {
    "runs": lambda s: s.list_runs(),
    "record": lambda s: s.get_run_record("done"),
    "step": lambda s: s.get_step_record("done", "fetch/0"),
    "export": lambda s: s.export_run_record("done").decode(),
    "verify": lambda s: [r.to_dict() for r in s.verify_all()],
    "evictions": lambda s: s.evictions(),
    "consumers": lambda s: [c.name for c in s.consumers()],
    "completions": lambda s: [c.run_id for c in s.completions(after=0)],
    "stats": lambda s: {
        k: v
        for k, v in s.stats(fe.RetentionPolicy(keep_last=0)).items()
        if k in ("runs", "events", "payloads", "retention")
    },
}


def record(store: fe.Store) -> None:
    """Two finished runs (one with an artifact file and a manifest), an evicted one, an active one."""
    run = store.start_run("billing", inputs={"n": 2}, run_id="done")
    run.begin_step("fetch/0", arguments={"url": "https://x"})
    run.invoke("fetch/0", 1, "http.get", ARTIFACT, "not-dispatched")
    run.result("fetch/0", 1, "succeeded", result={"ok": True})
    run.end_step("fetch/0", "succeeded")
    run.add_artifact(b"report bytes", "report", name="report.txt")
    run.record_manifest(config={"seed": 1})
    run.conclude("succeeded", outputs={"total": 3})
    gone = store.start_run("billing", run_id="gone")
    gone.conclude("failed")
    store.evict_run("gone", reason="test")
    store.register_consumer("feed")
    store.start_run("ingest", run_id="active").begin_step("parse")


def reads(store: fe.Store) -> dict[str, Any]:
    return {name: read(store) for name, read in READS.items()}


def write_calls(store: fe.Store) -> dict[str, Callable[[], Any]]:
    """Every Store call that writes, with arguments it would accept on a writable store."""
    return {
        "start_run": lambda: store.start_run("billing", run_id="new"),
        "resume_run": lambda: store.resume_run("active"),
        "rebuild_projections": lambda: store.rebuild_projections(),
        "apply_retention": lambda: store.apply_retention(fe.RetentionPolicy(keep_last=0)),
        "evict_run": lambda: store.evict_run("done", reason="x"),
        "remove_payloads": lambda: store.remove_payloads("done"),
        "purge_tombstones": lambda: store.purge_tombstones("0s"),
        "gc": lambda: store.gc(0),
        "register_consumer": lambda: store.register_consumer("other"),
        "unregister_consumer": lambda: store.unregister_consumer("feed"),
        "acknowledge": lambda: store.acknowledge("feed", 1),
    }


def refused_writes(store: fe.Store) -> dict[str, str]:
    """Each write call's outcome: "refused" when it raised StoreError saying read-only."""
    out = {}
    for name, call in write_calls(store).items():
        try:
            call()
            out[name] = "done"
        except fe.StoreError as e:
            out[name] = "refused" if "opened read-only" in str(e) else f"StoreError: {e}"
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"
    return out


def picture(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file and folder under ``folder``: (mode, mtime in ns, bytes) - what "writes
    nothing" compares, meaningful as root too (where permissions stop no write)."""
    out: dict[str, tuple[int, int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath, name)
            st = p.lstat()
            out[str(p.relative_to(folder))] = (
                st.st_mode,
                st.st_mtime_ns,
                b"" if p.is_dir() else p.read_bytes(),
            )
    st = folder.stat()
    out["."] = (st.st_mode, st.st_mtime_ns, b"")
    return out
