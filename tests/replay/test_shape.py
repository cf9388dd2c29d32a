"""Documents that enter the diff from outside a store are checked: a malformed one is a
refusal naming the member, from the API (``InvalidRequest``) and the CLI (exit 2)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main
from forkline_es.replay import baseline_document
from forkline_es.replay.shape import ENTRY_KINDS

from .histories import ART

Doc = dict[str, Any]


def _recorded(store: fe.Store) -> str:
    run = store.start_run("wf", inputs={"n": 1})
    run.begin_step("a", arguments={"q": 1})
    run.invoke("a", 1, "op", ART, "ambiguous")
    run.result("a", 1, "succeeded", result=1)
    child = store.start_run("wf/child", parent=run.id)
    child.begin_step("c")
    child.end_step("c", "succeeded")
    child.conclude("succeeded")
    run.child("a", child.id)
    run.end_step("a", "succeeded")
    first = run.begin_step("b")
    run.recover([first])
    run.conclude("succeeded")
    return run.id


def _entry(kind: str) -> Callable[[Doc], Doc]:
    """The first entry of ``kind`` in a document, to break one member of it."""
    return lambda doc: next(e for e in doc["entries"] if e["kind"] == kind)


def _set(member: str, value: Any, of: Callable[[Doc], Doc] = lambda doc: doc) -> Callable[[Doc], None]:
    return lambda doc: of(doc).__setitem__(member, value)


def _embedded_child(doc: Doc) -> Doc:
    child = _entry("child")(doc)["child"]
    assert isinstance(child, dict)
    return child


#: (name, how the valid document is broken, the member the refusal names)
BROKEN: list[tuple[str, Callable[[Doc], None], str]] = [
    ("entries not objects", lambda doc: doc.__setitem__("entries", [1, 2]), "`entries[0]` must be an object"),
    (
        "a null entry",
        lambda doc: doc.__setitem__("entries", [None]),
        "`entries[0]` must be an object, got null",
    ),
    ("run not an object", _set("run", 5), "`run` must be an object, got int"),
    ("no run", lambda doc: doc.pop("run"), "`run` must be an object, it is missing"),
    ("no entries", lambda doc: doc.pop("entries"), "`entries` must be a list"),
    ("unknown entry kind", _set("kind", "bogus", _entry("result")), "'bogus' is not an entry kind"),
    (
        "supersedes a string",
        _set("supersedes", "x", _entry("recovery")),
        "`entries[7].supersedes` must be a list",
    ),
    ("child a number", _set("child", 5, _entry("child")), "`entries[4].child` must be a run id"),
    ("seq a string", _set("seq", "3", _entry("invoke")), "`entries[2].seq` must be an integer, got str"),
    ("attempt missing", lambda doc: _entry("invoke")(doc).pop("attempt"), "`entries[2].attempt`"),
    ("step not an object", _set("step", [], _entry("step")), "`entries[1].step` must be a step record"),
    ("payload slot not an object", _set("payloads", {"result": 1}, _entry("result")), "slot 'result'"),
    (
        "inside an embedded child",
        lambda doc: _embedded_child(doc)["entries"].append(7),
        "`entries[4].child.entries[4]` must be an object",
    ),
]


def _baseline(store: fe.Store) -> Doc:
    return baseline_document(store.get_run_record(_recorded(store)), store.get_run_record)


@pytest.mark.parametrize(("name", "brk", "named"), BROKEN, ids=[b[0] for b in BROKEN])
def test_diff_documents_refuses_a_malformed_document_on_either_side(
    mem_store: fe.Store, name: str, brk: Callable[[Doc], None], named: str
) -> None:
    good = _baseline(mem_store)
    assert fe.diff_documents(good, good).is_match
    bad = copy.deepcopy(good)
    brk(bad)
    for a, b, side in ((bad, good, "document A"), (good, bad, "document B")):
        with pytest.raises(fe.InvalidRequest) as caught:
            fe.diff_documents(a, b, resolve=mem_store.get_run_record)
        assert caught.value.code == "invalid-request"
        assert caught.value.message.startswith(f"{side} is not a run record document")
        assert named in caught.value.message


def test_a_resolved_child_document_is_checked_too(mem_store: fe.Store) -> None:
    doc = mem_store.get_run_record(_recorded(mem_store))

    def resolve(run_id: str) -> Doc:
        return {"run": {}, "entries": [{"kind": "start"}]}

    with pytest.raises(fe.InvalidRequest, match=r"child run '\w+' .*`entries\[0\]\.seq`"):
        fe.diff_documents(doc, doc, resolve=resolve)


@pytest.mark.parametrize(("name", "brk", "named"), BROKEN, ids=[b[0] for b in BROKEN])
def test_diff_with_a_malformed_baseline_is_a_refusal_exit_2(
    db_path: Path, tmp_path: Path, name: str, brk: Callable[[Doc], None], named: str
) -> None:
    with fe.Store.open(db_path) as store:
        bad = _baseline(store)
        run_id = _recorded(store)
    brk(bad)
    path = tmp_path / "bad.golden.json"
    path.write_text(json.dumps(bad))
    done = CliRunner().invoke(main, ["diff", "--db", str(db_path), "--baseline", str(path), run_id])
    assert done.exit_code == 2, done.output
    assert "invalid-request" in done.output and named in done.output and str(path) in done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)


def test_the_entry_kinds_are_the_schemas() -> None:
    """The check hand-writes what the shipped schema says of entries: they must not drift."""
    schema_path = Path(fe.__file__).parent / "schema" / "run-record.schema.json"
    schema = json.loads(schema_path.read_text())
    assert set(ENTRY_KINDS) == set(schema["$defs"]["entry"]["properties"]["kind"]["enum"])
