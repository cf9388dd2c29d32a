"""Symbolic links planted inside ``<db>.artifacts/`` are never followed (issue 20, item 13).

A write that would pass through one is refused with a StoreError naming it, before anything
is recorded or written; verify reports one on an artifact's or manifest's path; gc neither
follows nor deletes one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import forkline_es as fe

from .helpers import COMMIT, log_rows


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Where a planted link points: it must stay exactly as it was."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "precious").write_bytes(b"not the store's")
    return folder


def _untouched(outside: Path) -> bool:
    return [p.name for p in outside.iterdir()] == ["precious"] and (outside / "precious").read_bytes() == (
        b"not the store's"
    )


def _address(content: bytes) -> str:
    hexdigest = hashlib.sha256(content).hexdigest()
    return f"objects/{hexdigest[:2]}/{hexdigest[2:]}"


@pytest.mark.parametrize("planted", ["tmp", "objects", "objects/{ab}", "objects/{ab}/{rest}"])
def test_an_artifact_is_not_written_through_a_planted_link(
    store: fe.Store, outside: Path, planted: str
) -> None:
    content = b"content that would land outside"
    address = _address(content)
    ab, rest = address.split("/")[1:]
    run = store.start_run("wf")
    store.artifact_files.root.mkdir(exist_ok=True)
    link = store.artifact_files.root / planted.format(ab=ab, rest=rest)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside / "precious" if planted.endswith("{rest}") else outside)
    before = log_rows(store)
    with pytest.raises(
        fe.StoreError, match=rf"{link} is a symbolic link inside the artifact folder.*nothing was recorded"
    ):
        run.add_artifact(content, "trace", name="a")
    assert log_rows(store) == before
    assert _untouched(outside)
    tmp = store.artifact_files.root / "tmp"
    assert tmp.is_symlink() or not tmp.exists() or not list(tmp.iterdir())


@pytest.mark.parametrize("planted", ["runs", "runs/r1", "runs/r1/manifest.json"])
def test_a_manifest_is_not_written_through_a_planted_link(
    store: fe.Store, outside: Path, planted: str
) -> None:
    run = store.start_run("wf", run_id="r1")
    link = store.artifact_files.root / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside / "precious" if planted.endswith(".json") else outside)
    before = log_rows(store)
    with pytest.raises(fe.StoreError, match=rf"{link} is a symbolic link"):
        run.record_manifest(git_commit=COMMIT)
    assert log_rows(store) == before
    assert _untouched(outside)
    tmp = store.artifact_files.root / "tmp"
    assert not tmp.exists() or not list(tmp.iterdir())


def test_verify_reports_a_link_on_an_artifact_s_or_manifest_s_path(store: fe.Store, tmp_path: Path) -> None:
    """Links to copies with exactly the recorded bytes: following them would say all is well."""
    run = store.start_run("wf", run_id="r1")
    run.add_artifact(b"first", "trace", name="first")
    run.add_artifact(b"second", "trace", name="second")
    run.record_manifest(git_commit=COMMIT)
    root = store.artifact_files.root
    copies = tmp_path / "copies"
    copies.mkdir()
    # the first artifact's file itself becomes a link to a copy
    first = root / _address(b"first")
    (copies / "first").write_bytes(first.read_bytes())
    first.unlink()
    first.symlink_to(copies / "first")
    # the second's folder becomes a link to a copy of the folder
    second = root / _address(b"second")
    (copies / "second").mkdir()
    (copies / "second" / second.name).write_bytes(second.read_bytes())
    for p in second.parent.iterdir():
        p.unlink()
    second.parent.rmdir()
    second.parent.symlink_to(copies / "second")
    # and manifest.json a link to a copy
    manifest = root / store.artifact_files.manifest_path("r1")
    (copies / "manifest.json").write_bytes(manifest.read_bytes())
    manifest.unlink()
    manifest.symlink_to(copies / "manifest.json")

    report = store.verify_run("r1")
    assert sorted((p.kind, p.seq) for p in report.problems) == [
        ("artifact-symlink", 2),
        ("artifact-symlink", 3),
        ("artifact-symlink", 4),
    ]
    assert {p.actual for p in report.problems} == {str(first), str(second.parent), str(manifest)}
    # gc neither follows nor deletes a link, whatever its age
    run.conclude("succeeded")
    store.evict_run("r1", reason="test")
    for p in copies.rglob("*"):
        os.utime(p, (1_000_000_000, 1_000_000_000), follow_symlinks=False)
    store.gc(artifact_grace_seconds=0)
    assert first.is_symlink() and second.parent.is_symlink() and manifest.is_symlink()
    assert sorted(p.name for p in copies.rglob("*")) == sorted(
        ["first", "second", second.name, "manifest.json"]
    )
