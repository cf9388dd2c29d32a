"""The JSON Schema (2020-12) of the run record document, shipped as package data.

``$defs/summary`` describes one element of ``list_runs()`` and ``$defs/step`` one
``get_step_record()`` result; ``definition(name)`` wraps either as a standalone schema.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_FILE", "definition", "run_record_schema"]

SCHEMA_FILE = "run-record.schema.json"


@cache
def _load() -> str:
    return resources.files(__name__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def run_record_schema() -> dict[str, Any]:
    """A fresh copy of the run record document schema."""
    schema: dict[str, Any] = json.loads(_load())
    return schema


def definition(name: str) -> dict[str, Any]:
    """A standalone schema for ``$defs/<name>`` (e.g. ``summary``, ``step``, ``entry``)."""
    schema = run_record_schema()
    if name not in schema["$defs"]:
        raise KeyError(f"the run record schema has no $defs/{name}; it has {sorted(schema['$defs'])}")
    return {"$schema": schema["$schema"], "$ref": f"#/$defs/{name}", "$defs": schema["$defs"]}
