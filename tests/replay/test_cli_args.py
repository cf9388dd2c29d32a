"""`forkline-es diff`: its arguments, --window, --all text, and --json's exit status.

Each case is one a mutation pass over forkline_es/cli/replay.py found unguarded.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main


def steps_run(store: fe.Store, paths: list[str], child_workflow: str | None = None) -> str:
    run = store.start_run("wf")
    for path in paths:
        run.begin_step(path)
        run.end_step(path, "succeeded")
    if child_workflow is not None:
        child = store.start_run(child_workflow, parent=run.id)
        child.conclude("succeeded")
        run.child("c", child.id)
    run.conclude("succeeded")
    return run.id


def diff(db: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["diff", "--db", str(db), *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_wrong_number_of_run_ids_is_a_usage_error(db_path: Path) -> None:
    """A third id is not silently ignored; the message shows the usage."""
    with fe.Store.open(db_path) as store:
        a, b, c = (steps_run(store, ["s"]) for _ in range(3))
    code, out, err = diff(db_path, a, b, c)
    assert code == 2 and out == ""
    assert (
        err
        == "error: expected 2 run id(s), got 3; usage: forkline-es diff A B (or diff --baseline FILE RUN)\n"
    )
    code, _, err = diff(db_path, "--baseline", "x.json", a, b)
    assert code == 2 and "expected 1 run id(s), got 2; usage: forkline-es diff --baseline FILE RUN" in err


def test_json_exits_1_on_a_divergence_as_text_does(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        a, same, other = steps_run(store, ["s"]), steps_run(store, ["s"]), steps_run(store, ["t"])
    code, out, _ = diff(db_path, "--json", a, same)
    assert code == 0 and json.loads(out)["match"] is True
    code, out, _ = diff(db_path, "--json", a, other)
    assert code == 1 and json.loads(out)["match"] is False


def test_all_lists_every_divergence_as_text(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        a, b = steps_run(store, ["s", "t"]), steps_run(store, ["u", "v"])
    _, first, _ = diff(db_path, a, b)
    code, every, _ = diff(db_path, "--all", a, b)
    count = json.loads(diff(db_path, "--json", a, b)[1])["count"]
    assert code == 1 and count > 1
    assert len(every.splitlines()) > len(first.splitlines()) and "more; --all" not in every
    assert every.splitlines()[0] == first.splitlines()[0] and every.startswith("first divergence: ")


def test_window_reaches_both_kinds_of_diff(db_path: Path, tmp_path: Path) -> None:
    """One inserted step is two entries: the default window realigns past it, a window of 1 cannot."""
    with fe.Store.open(db_path) as store:
        a, b = steps_run(store, ["a", "b"]), steps_run(store, ["x", "a", "b"])
    golden = tmp_path / "a.golden.json"
    golden.write_bytes(
        CliRunner().invoke(main, ["export", "--db", str(db_path), "--baseline", a]).stdout_bytes
    )
    for expected in ([a], ["--baseline", str(golden)]):
        wide = json.loads(diff(db_path, "--json", "--all", *expected, b)[1])
        narrow = json.loads(diff(db_path, "--json", "--all", "--window", "1", *expected, b)[1])
        assert [(d["kind"], d["path"]) for d in wide["divergences"]] == [("extra-step", "x")]
        assert narrow["count"] > 1


def test_a_baseline_diff_reads_the_live_run_s_children(db_path: Path, tmp_path: Path) -> None:
    """The baseline embeds the child's document; the live run names its child, read from --db."""
    with fe.Store.open(db_path) as store:
        a = steps_run(store, ["s"], child_workflow="wf/child")
        same = steps_run(store, ["s"], child_workflow="wf/child")
        other = steps_run(store, ["s"], child_workflow="wf/other")
    golden = tmp_path / "a.golden.json"
    golden.write_bytes(
        CliRunner().invoke(main, ["export", "--db", str(db_path), "--baseline", a]).stdout_bytes
    )
    assert diff(db_path, "--baseline", str(golden), same)[:2] == (0, "match: no divergence\n")
    code, out, _ = diff(db_path, "--json", "--baseline", str(golden), other)
    assert code == 1 and json.loads(out)["first"]["kind"] == "child"


def _named(store: fe.Store, name: str, outcome: str = "succeeded") -> str:
    run = store.start_run("wf", name=name)
    run.begin_step("s")
    run.end_step("s", outcome)
    run.conclude("succeeded")
    return run.id


def test_strict_counts_metadata_and_ignore_leaves_members_out(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        a, renamed, failed = _named(store, "x"), _named(store, "y"), _named(store, "x", "failed")
    assert diff(db_path, a, renamed)[:2] == (
        0,
        "match: no behaviour divergence (1 metadata; --strict counts them)\n",
    )
    code, out, _ = diff(db_path, "--strict", a, renamed)
    assert code == 1 and out.startswith("first divergence: metadata: the run's name differs")
    assert diff(db_path, "--strict", "--ignore", "/run/name", a, renamed)[:2] == (0, "match: no divergence\n")
    assert diff(db_path, a, failed)[0] == 1
    assert diff(db_path, "--ignore", "/step/outcome", "--ignore", "/nothing/*", a, failed)[0] == 0
    as_json = json.loads(diff(db_path, "--json", "--strict", a, renamed)[1])
    assert as_json["strict"] is True and as_json["match"] is False and as_json["counts"]["metadata"] == 1
    code, out, err = diff(db_path, "--ignore", "step/outcome", a, failed)
    assert code == 2 and "invalid-request" in out + err and "must start with `/`" in out + err
