"""The shipped JSON Schema: well-formed 2020-12, strict about members, open to ``x-``."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

import forkline_es as fe
from forkline_es.schema import definition, run_record_schema

ART = "sha256:" + "b" * 64


def _document(store: fe.Store) -> dict[str, Any]:
    run = store.start_run("wf", name="W", inputs={"a": [1, 2.5]}, pins={"definition": ART})
    run.begin_step("s/0", arguments={"k": "v"})
    run.invoke("s/0", 1, "op", ART, "ambiguous")
    run.result("s/0", 1, "failed", code="timeout")
    run.end_step("s/0", "failed", code="timeout", branch={"else": True})
    run.conclude("failed", path="s/0", code="timeout", reason="gave up")
    return store.get_run_record(run.id)


def _valid(instance: Any, schema: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_the_schema_is_well_formed_and_accepts_a_real_document(mem_store: fe.Store) -> None:
    jsonschema.Draft202012Validator.check_schema(run_record_schema())
    doc = _document(mem_store)
    assert _valid(doc, run_record_schema())
    assert all(_valid(s, definition("summary")) for s in mem_store.list_runs())
    assert _valid(doc["steps"]["s/0"], definition("step"))


@pytest.mark.parametrize(
    ("where", "member"),
    [((), "extra"), (("run",), "extra"), (("steps", "s/0"), "extra"), (("entries", 2), "child")],
)
def test_undefined_members_are_refused_and_x_extensions_admitted(
    mem_store: fe.Store, where: tuple[str | int, ...], member: str
) -> None:
    doc = _document(mem_store)
    target: Any = doc
    for key in where:
        target = target[key]
    target[member] = 1
    assert not _valid(doc, run_record_schema())
    del target[member]
    target["x-" + member] = 1
    assert _valid(doc, run_record_schema())


def test_slot_and_step_rules(mem_store: fe.Store) -> None:
    doc = _document(mem_store)
    doc["payloads"]["inputs"]["state"] = "removed"  # a value without state present
    assert not _valid(doc, run_record_schema())
    doc = _document(mem_store)
    del doc["steps"]["s/0"]["outcome"]  # ended without outcome
    assert not _valid(doc, run_record_schema())
    doc = _document(mem_store)
    doc["payloads"]["inputs"]["value"] = {"kind": "int", "value": "1"}
    assert not _valid(doc, run_record_schema())
    doc = _document(mem_store)
    doc["pins"]["definition"] = "sha256:ABC"
    assert not _valid(doc, run_record_schema())


def test_an_invoke_artifact_must_be_a_digest(mem_store: fe.Store) -> None:
    run = mem_store.start_run("wf")
    before = mem_store.log.max_position()
    with pytest.raises(fe.InvalidRequest):
        run.invoke("s", 1, "op", "connector@1", "not-dispatched")
    assert mem_store.log.max_position() == before
