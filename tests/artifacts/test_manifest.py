"""The reproducibility manifest: captured facts, unknowns as None, a digest of the facts alone."""

from __future__ import annotations

import json
import math
import platform
import subprocess
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
from forkline_es.artifacts.manifest import GIT_TIMEOUT_S, REQUIRED_FACTS, git_commit
from forkline_es.values import canonical_json, sha256_digest

from .helpers import COMMIT, DEFINITION


def _complete_run(store: fe.Store) -> fe.Run:
    return store.start_run("wf", pins={"definition": DEFINITION})


def test_automatic_facts_are_captured(store: fe.Store) -> None:
    run = _complete_run(store)
    m = run.record_manifest(packages=["msgspec"], config={"b": [1, 2], "a": "x"})
    assert m.facts["forkline_es_version"] == fe.__version__
    assert m.facts["python"] == platform.python_version()
    assert m.facts["platform"] == platform.platform()
    assert m.facts["packages"] == {"msgspec": __import__("importlib.metadata").metadata.version("msgspec")}
    assert m.facts["config_hash"] == sha256_digest(b'{"a":"x","b":[1,2]}')
    assert m.facts["definition_digest"] == DEFINITION
    assert m.facts["pins"] == {"definition": DEFINITION}


def test_the_digest_is_over_the_canonical_facts_alone(store: fe.Store) -> None:
    run = _complete_run(store)
    m = run.record_manifest(config={}, git_commit=COMMIT)
    assert m.digest == sha256_digest(canonical_json(m.facts))
    assert store.get_run_record(run.id)["x-manifest"]["digest"] == m.digest
    # the same facts in another run give the same digest: run identity is not a fact
    other = store.start_run("wf", pins={"definition": DEFINITION}).record_manifest(
        config={}, git_commit=COMMIT
    )
    assert other.digest == m.digest


def test_unobserved_facts_are_none_and_listed(
    store: fe.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not a git work tree
    run = store.start_run("wf")  # no pins, so no definition digest
    m = run.record_manifest(packages=["surely-not-installed-pkg"], seed=None)
    assert m.facts["git_commit"] is None
    assert m.facts["config_hash"] is None
    assert m.facts["definition_digest"] is None
    assert m.facts["packages"] == {"surely-not-installed-pkg": None}
    assert m.unknown_fields == [
        "config_hash",
        "definition_digest",
        "git_commit",
        "pins",
        "seed",
        "packages.surely-not-installed-pkg",
    ]
    assert m.complete is False
    on_disk = json.loads((store.artifact_files.root / f"runs/{run.id}/manifest.json").read_bytes())
    assert on_disk["facts"]["git_commit"] is None  # null, never 0 or ""
    assert store.backend.cursor().execute(
        "SELECT complete FROM manifest WHERE run_id = ?", (run.id,)
    ).fetchall() == [(0,)]


def test_complete_needs_every_required_fact_and_every_named_package(store: fe.Store) -> None:
    m = _complete_run(store).record_manifest(config={}, git_commit=COMMIT, packages=["msgspec"])
    assert m.complete and m.unknown_fields == []
    for missing in REQUIRED_FACTS:
        facts = {"git_commit": COMMIT, missing: None}
        m2 = _complete_run(store).record_manifest(config={}, **facts)
        assert not m2.complete and missing in m2.unknown_fields


def test_optional_unknown_facts_do_not_make_it_incomplete(store: fe.Store) -> None:
    m = _complete_run(store).record_manifest(config={}, git_commit=COMMIT, gpu=None)
    assert m.unknown_fields == ["gpu"] and m.complete


def test_manifest_json_is_written_with_the_digest(store: fe.Store) -> None:
    run = _complete_run(store)
    m = run.record_manifest(config={}, git_commit=COMMIT)
    doc = json.loads((store.artifact_files.root / "runs" / run.id / "manifest.json").read_bytes())
    assert doc == {
        "complete": True,
        "digest": m.digest,
        "facts": m.facts,
        "run_id": run.id,
        "unknown_fields": [],
    }


def test_the_same_manifest_twice_is_idempotent_another_is_a_conflict(store: fe.Store) -> None:
    run = _complete_run(store)
    first = run.record_manifest(config={"x": 1}, git_commit=COMMIT)
    again = run.record_manifest(config={"x": 1}, git_commit=COMMIT)
    assert again.seq == first.seq and again.digest == first.digest
    with pytest.raises(fe.Conflict):
        run.record_manifest(config={"x": 2}, git_commit=COMMIT)
    assert store.get_run_record(run.id)["x-manifest"]["digest"] == first.digest


@pytest.mark.parametrize("bad", [math.nan, math.inf, b"bytes", {1: "x"}])
def test_facts_outside_the_json_domain_are_refused(store: fe.Store, bad: object) -> None:
    run = _complete_run(store)
    with pytest.raises(fe.InvalidValue):
        run.record_manifest(config={}, odd=bad)
    assert "x-manifest" not in store.get_run_record(run.id)
    assert not (store.artifact_files.root / "runs" / run.id).exists()


def test_git_commit_is_head_of_a_work_tree_and_none_elsewhere(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert git_commit(repo) == head


def test_git_missing_means_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert git_commit() is None


#: docs/verify.md's list, written out: the test must not read the list it checks.
DOCUMENTED_REQUIRED = (
    "forkline_es_version",
    "python",
    "platform",
    "git_commit",
    "config_hash",
    "definition_digest",
)


def test_the_required_facts_are_the_documented_ones() -> None:
    assert REQUIRED_FACTS == DOCUMENTED_REQUIRED


@pytest.mark.parametrize("missing", DOCUMENTED_REQUIRED)
def test_each_documented_required_fact_unknown_makes_it_incomplete(store: fe.Store, missing: str) -> None:
    facts = {"git_commit": COMMIT, missing: None}
    m = _complete_run(store).record_manifest(config={}, **facts)
    assert not m.complete and missing in m.unknown_fields


def _fake_git(monkeypatch: pytest.MonkeyPatch, run: Any) -> None:
    monkeypatch.setattr("forkline_es.artifacts.manifest.subprocess.run", run)


def test_a_sha256_repository_commit_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """git's sha256 object format names a commit with 64 hex digits, not 40."""
    head = "0123456789abcdef" * 4
    _fake_git(monkeypatch, lambda *a, **k: subprocess.CompletedProcess(a, 0, head + "\n", ""))
    assert git_commit() == head
    _fake_git(monkeypatch, lambda *a, **k: subprocess.CompletedProcess(a, 0, head[:50] + "\n", ""))
    assert git_commit() is None  # neither length: not a commit


def test_a_git_that_hangs_means_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def hang(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert kwargs["timeout"] == GIT_TIMEOUT_S
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    _fake_git(monkeypatch, hang)
    assert git_commit() is None


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"packages": "msgspec"}, fe.InvalidRequest),  # one string, not a list of names
        ({"packages": [""]}, fe.InvalidRequest),
        ({"packages": [3]}, fe.InvalidRequest),
        ({"": 1}, fe.InvalidRequest),  # a fact needs a name
    ],
)
def test_bad_manifest_arguments_are_refused_and_write_nothing(
    store: fe.Store, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    run = _complete_run(store)
    with pytest.raises(error):
        run.record_manifest(config={}, **kwargs)
    assert "x-manifest" not in store.get_run_record(run.id)
    assert not (store.artifact_files.root / "runs" / run.id).exists()


def test_x_manifest_states_completeness_as_a_boolean_and_the_file(store: fe.Store) -> None:
    run = _complete_run(store)
    m = run.record_manifest(config={}, git_commit=COMMIT)
    exported = json.loads(store.export_run_record(run.id))["x-manifest"]
    assert exported == {
        "digest": m.digest,
        "complete": True,
        "unknown_fields": [],
        "path": f"runs/{run.id}/manifest.json",
    }
    assert exported["complete"] is True  # JSON true, not 1


def test_a_manifest_is_accepted_after_the_run_concluded(store: fe.Store) -> None:
    run = _complete_run(store)
    run.conclude("succeeded")
    m = run.record_manifest(config={}, git_commit=COMMIT)
    assert store.get_run_record(run.id)["x-manifest"]["digest"] == m.digest
    assert store.get_run_record(run.id)["run"]["status"] == "succeeded"
