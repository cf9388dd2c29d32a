"""Artifacts: content-addressed files beside the database, recorded on the log."""

from __future__ import annotations

import errno
import hashlib
import io
import os
from pathlib import Path, PurePosixPath
from typing import IO

import pytest

import forkline_es as fe
from forkline_es.artifacts import store as artifact_store

from .helpers import log_rows, record_sample


@pytest.mark.sqlite_only("artifacts beside the database file; a server's go where open says")
def test_bytes_are_stored_under_their_sha256_beside_the_database(
    sqlite_store: fe.Store, db_path: Path
) -> None:
    store = sqlite_store
    run = store.start_run("wf")
    data = b"some output\n"
    seq = run.add_artifact(data, "trace", content_type="text/plain")
    hexdigest = hashlib.sha256(data).hexdigest()
    stored = Path(str(db_path) + ".artifacts") / "objects" / hexdigest[:2] / hexdigest[2:]
    assert stored.read_bytes() == data
    (item,) = store.get_run_record(run.id)["x-artifacts"]
    assert item == {
        "name": f"sha256:{hexdigest}",
        "path": f"objects/{hexdigest[:2]}/{hexdigest[2:]}",
        "sha256": f"sha256:{hexdigest}",
        "size_bytes": len(data),
        "kind": "trace",
        "content_type": "text/plain",
    }
    assert seq == 2
    assert not list((Path(str(db_path) + ".artifacts") / "tmp").iterdir())  # no staging leftovers


def test_a_path_is_named_by_its_basename_and_streamed(store: fe.Store, tmp_path: Path) -> None:
    source = tmp_path / "model.bin"
    source.write_bytes(bytes(range(256)) * 5000)  # more than one read chunk
    run = store.start_run("wf")
    run.add_artifact(source, "model", step="train")
    (item,) = store.get_run_record(run.id)["x-artifacts"]
    assert item["name"] == "model.bin"
    assert item["size_bytes"] == 256 * 5000
    assert item["sha256"] == "sha256:" + hashlib.sha256(source.read_bytes()).hexdigest()
    assert item["step"] == "train"
    assert "content_type" not in item  # never guessed: unknown stays absent


def test_the_same_content_under_the_same_name_is_idempotent(store: fe.Store) -> None:
    run = store.start_run("wf")
    first = run.add_artifact(b"x", "trace", name="t")
    before = store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0]
    assert run.add_artifact(b"x", "trace", name="t") == first
    assert store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0] == before


def test_the_same_name_with_other_content_is_a_conflict_and_writes_nothing(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.add_artifact(b"x", "trace", name="t")
    before = store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0]
    objects = sorted(p for p in (store.artifact_files.root / "objects").rglob("*") if p.is_file())
    with pytest.raises(fe.Conflict):
        run.add_artifact(b"y", "trace", name="t")
    assert store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0] == before
    after = sorted(p for p in (store.artifact_files.root / "objects").rglob("*") if p.is_file())
    assert after == objects  # the refused content was not placed


def test_two_runs_share_one_file_for_the_same_content(store: fe.Store) -> None:
    a, b = store.start_run("wf"), store.start_run("wf")
    a.add_artifact(b"same", "trace")
    b.add_artifact(b"same", "trace")
    files = [p for p in (store.artifact_files.root / "objects").rglob("*") if p.is_file()]
    assert len(files) == 1
    assert store.verify_run(a.id).ok and store.verify_run(b.id).ok


def test_artifacts_are_accepted_after_the_run_concluded(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.conclude("failed")
    run.add_artifact(b"post-mortem", "log")
    assert len(store.get_run_record(run.id)["x-artifacts"]) == 1
    assert store.get_run_record(run.id)["run"]["status"] == "failed"


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"source": 3, "kind": "k"}, "invalid-request"),
        ({"source": b"x", "kind": ""}, "invalid-request"),
        ({"source": b"x", "kind": "k", "step": "a//b"}, "invalid-request"),
        ({"source": b"x", "kind": "k", "content_type": ""}, "invalid-request"),
        ({"source": b"x", "kind": "k", "name": ""}, "invalid-request"),
        ({"source": b"x", "kind": "k", "name": "x\ud800"}, "invalid-request"),
        ({"source": "/no/such/file", "kind": "k"}, "invalid-request"),
    ],
)
def test_bad_arguments_are_refused_and_write_nothing(
    store: fe.Store, kwargs: dict[str, object], code: str
) -> None:
    run = store.start_run("wf")
    with pytest.raises(fe.RecordError) as e:
        run.add_artifact(**kwargs)  # type: ignore[arg-type]
    assert e.value.code == code
    assert "x-artifacts" not in store.get_run_record(run.id)


@pytest.mark.sqlite_only("a SQLite database in memory has no folder beside it")
def test_a_memory_store_keeps_artifacts_in_a_temporary_folder(sqlite_mem_store: fe.Store) -> None:
    mem_store = sqlite_mem_store
    run = mem_store.start_run("wf")
    run.add_artifact(b"in memory", "trace")
    root = mem_store.artifact_files.root
    assert root.is_dir() and root.name.startswith("forkline-es-artifacts-")
    assert mem_store.verify_run(run.id).ok


def test_rebuild_reproduces_the_artifact_projections(store: fe.Store, tmp_path: Path) -> None:
    run = record_sample(store, tmp_path)
    before = store.export_run_record(run.id)
    store.rebuild_projections()
    assert store.export_run_record(run.id) == before


def test_the_document_with_extensions_validates_against_the_shipped_schema(
    store: fe.Store, tmp_path: Path
) -> None:
    import jsonschema

    from forkline_es.schema import run_record_schema

    run = record_sample(store, tmp_path)
    doc = store.get_run_record(run.id)
    assert {"x-artifacts", "x-manifest", "x-observations"} <= set(doc)
    jsonschema.Draft202012Validator(run_record_schema()).validate(doc)


def test_show_lists_artifacts_manifest_and_observations(store: fe.Store, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from forkline_es.cli.main import main

    run = record_sample(store, tmp_path)
    digest = store.get_run_record(run.id)["x-manifest"]["digest"]
    result = CliRunner().invoke(main, ["show", run.id, "--db", store.path])
    assert result.exit_code == 0
    assert "trace.txt\ttrace\t" in result.output
    assert f"digest\t{digest}" in result.output
    assert "latency_ms\t12.5\tms" in result.output


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "..", "x" * 200, "spaced out", "ünï"])
def test_any_run_id_gets_one_folder_inside_runs(store: fe.Store, run_id: str) -> None:
    """A run id is opaque text: one that is not a safe file name is hashed, never a path."""
    run = store.start_run("wf", run_id=run_id)
    run.record_manifest(config={})
    path = store.get_run_record(run_id)["x-manifest"]["path"]
    folder = PurePosixPath(path).parent
    assert folder.parent == PurePosixPath("runs") and folder.name not in ("", ".", "..")
    assert (store.artifact_files.root / path).is_file()
    assert store.verify_run(run_id).ok


def _spy_on_disk_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Record (call, inode) of every os.fsync and os.replace, then do the real call."""
    calls: list[tuple[str, int]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.fstat(fd).st_ino))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(("replace", os.stat(src).st_ino))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return calls


def _written_durably(calls: list[tuple[str, int]], target: Path) -> None:
    """The file's bytes were synced before its name appeared, and its folder after the rename."""
    inode = target.stat().st_ino
    renamed = calls.index(("replace", inode))
    assert calls.index(("fsync", inode)) < renamed
    assert ("fsync", target.parent.stat().st_ino) in calls[renamed:]


def test_content_and_manifest_are_synced_then_renamed_into_place(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/verify.md: written to a temporary file, fsynced and renamed, so never seen half-written."""
    run = store.start_run("wf")
    calls = _spy_on_disk_calls(monkeypatch)
    run.add_artifact(b"durable bytes", "trace", name="t")
    run.record_manifest(config={})
    record = store.get_run_record(run.id)
    _written_durably(calls, store.artifact_files.root / record["x-artifacts"][0]["path"])
    _written_durably(calls, store.artifact_files.root / record["x-manifest"]["path"])


def test_stored_content_is_never_rewritten(store: fe.Store) -> None:
    """The same bytes registered again keep the file that is there (a reader may hold it open)."""
    store.start_run("wf").add_artifact(b"shared", "trace")
    (path,) = [p for p in (store.artifact_files.root / "objects").rglob("*") if p.is_file()]
    inode = path.stat().st_ino
    store.start_run("wf").add_artifact(b"shared", "trace")
    assert path.stat().st_ino == inode


@pytest.mark.parametrize("source", ["/dev/null", "."])
def test_a_source_that_is_not_a_regular_file_is_refused(store: fe.Store, source: str) -> None:
    """A device or pipe could stream without end; a folder has no content."""
    run = store.start_run("wf")
    with pytest.raises(fe.InvalidRequest):
        run.add_artifact(source, "trace")
    assert "x-artifacts" not in store.get_run_record(run.id)


def test_gc_reports_the_files_and_bytes_it_removed(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.add_artifact(b"12345", "trace")
    run.add_artifact(b"1234567", "trace")
    run.conclude("succeeded")
    store.evict_run(run.id, reason="test")
    report = store.gc(artifact_grace_seconds=0)
    assert (report.artifact_files_removed, report.artifact_bytes_removed) == (2, 12)


def test_an_explicit_name_wins_over_the_basename(store: fe.Store, tmp_path: Path) -> None:
    source = tmp_path / "out.bin"
    source.write_bytes(b"weights")
    run = store.start_run("wf")
    run.add_artifact(source, "model", name="model-v2.bin")
    assert [a["name"] for a in store.get_run_record(run.id)["x-artifacts"]] == ["model-v2.bin"]


def test_a_refused_artifact_leaves_no_staged_file(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.add_artifact(b"x", "trace", name="t")
    with pytest.raises(fe.Conflict):
        run.add_artifact(b"y", "trace", name="t")
    assert not list((store.artifact_files.root / "tmp").iterdir())


def _failing_rename(monkeypatch: pytest.MonkeyPatch) -> None:
    def replace(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)


def test_a_file_that_cannot_be_placed_after_its_commit_is_placed_by_a_repeat(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files are placed once their event committed (a refused call must leave every file as
    it was): a failed rename then says the event is recorded, and repeating the call places it."""
    run = store.start_run("wf")
    before = log_rows(store)
    with monkeypatch.context() as patched:
        _failing_rename(patched)
        with pytest.raises(
            fe.StoreError, match=r"placing objects/.* under .*No space left on device.*repeat"
        ):
            run.add_artifact(b"no room", "trace", name="t")
        with pytest.raises(
            fe.StoreError, match=r"placing runs/.*/manifest\.json under .*No space left.*repeat"
        ):
            run.record_manifest(config={})
    assert log_rows(store) == before + 2
    assert sorted(p.kind for p in store.verify_run(run.id).problems) == [
        "artifact-missing",
        "manifest-file-missing",
    ]
    assert run.add_artifact(b"no room", "trace", name="t") == before + 1
    run.record_manifest(config={})
    assert log_rows(store) == before + 2
    assert store.verify_run(run.id).ok
    assert not list((store.artifact_files.root / "tmp").iterdir())


def test_a_full_disk_while_staging_is_the_store_s_error_not_the_source_s(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Our copy of the content could not be written: a StoreError saying what to fix, not an
    ``invalid-request`` blaming the caller's source, and nothing recorded or left behind."""
    source = tmp_path / "model.bin"
    source.write_bytes(b"weights")
    run = store.start_run("wf")
    before = log_rows(store)

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)
    for content in (b"bytes", source):
        with pytest.raises(fe.StoreError, match=r"staging an artifact under .*free space") as refused:
            run.add_artifact(content, "trace")
        assert not isinstance(refused.value, fe.RecordError)
    assert log_rows(store) == before
    assert not list((store.artifact_files.root / "tmp").iterdir())


class _FullDisk(io.BytesIO):
    """A staging file on a full disk: every write and the final flush on close fail."""

    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def close(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_on_every_write_and_close_is_still_the_store_s_error(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing a buffered file after a failed write can fail again; that second error is
    about our disk too, and must not turn into the source's ``invalid-request``."""
    files = store.artifact_files
    real_temp = files._temp

    def full_disk_temp() -> tuple[IO[bytes], Path]:
        out, temp = real_temp()
        out.close()
        return _FullDisk(), temp

    monkeypatch.setattr(files, "_temp", full_disk_temp)
    run = store.start_run("wf")
    with pytest.raises(fe.StoreError, match=r"staging an artifact under .*No space left"):
        run.add_artifact(b"bytes", "trace")
    assert not list((files.root / "tmp").iterdir())


def test_a_source_that_fails_while_read_is_the_caller_s_error(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An I/O error reading the caller's file is ``invalid-request``, not our disk's StoreError."""
    source = tmp_path / "model.bin"
    source.write_bytes(b"weights")

    class Unreadable(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(artifact_store, "open", lambda path, mode: Unreadable(), raising=False)
    run = store.start_run("wf")
    before = log_rows(store)
    with pytest.raises(fe.InvalidRequest, match=r"cannot read artifact source: .*Input/output error"):
        run.add_artifact(source, "trace")
    assert log_rows(store) == before
    assert not list((store.artifact_files.root / "tmp").iterdir())
