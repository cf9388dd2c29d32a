"""Forkline 0.5.0's module layout: each import a Forkline user writes resolves here too.

``LAYOUT`` is the hand-written list a reader can see; ``test_every_forkline_module_and_name``
derives the same from the installed Forkline 0.5.0 (every module, its ``__all__`` or the
classes and functions it defines), so nothing it exports can be missed.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import forkline_es.forkline as fl

from ._real import load

#: module -> names Forkline 0.5.0 exposes there that this package provides.
LAYOUT = {
    "forkline_es.forkline": [
        "FORKLINE_VERSION", "SCHEMA_VERSION", "DEFAULT_FORKLINE_VERSION", "DEFAULT_SCHEMA_VERSION",
        "RunArtifact", "ArtifactEvent", "SchemaVersionError", "migrate_artifact",
        "Event", "Run", "Step", "Tracer", "SQLiteStore", "RunRecorder", "canon", "sha256_hex",
        "RedactionAction", "RedactionConfig", "RedactionPolicy", "RedactionRule", "RegexRedactionRule",
        "create_default_policy", "load_redaction_config",
        "ToolCallPayload", "ToolCallRecorder", "ToolCallTiming", "record_tool_call",
        "ReplayError", "MissingArtifactError", "DeterminismViolationError", "ReplayOrderError",
        "replay_mode", "is_replay_mode_active", "get_replay_run_id", "assert_not_in_replay_mode",
        "guard_live_call",
    ],
    "forkline_es.forkline.version": [
        "FORKLINE_VERSION", "SCHEMA_VERSION", "LEGACY_SCHEMA_VERSION",
        "DEFAULT_FORKLINE_VERSION", "DEFAULT_SCHEMA_VERSION",
    ],
    "forkline_es.forkline.storage": ["RunRecorder", "SQLiteStore"],
    "forkline_es.forkline.storage.recorder": ["RunRecorder"],
    "forkline_es.forkline.storage.store": ["SQLiteStore"],
    "forkline_es.forkline.tracer": ["Tracer"],
    "forkline_es.forkline.tracer.tracer": ["Tracer", "StepScope"],
    "forkline_es.forkline.core": [
        "Event", "Run", "Step", "canon", "sha256_hex", "bytes_preview",
        "RedactionAction", "RedactionConfig", "RedactionPolicy", "RedactionRule", "RegexRedactionRule",
        "create_default_policy", "load_redaction_config",
        "ToolCallPayload", "ToolCallRecorder", "ToolCallTiming", "record_tool_call",
        "ReplayError", "MissingArtifactError", "DeterminismViolationError", "ReplayOrderError",
        "replay_mode", "is_replay_mode_active", "get_replay_run_id", "assert_not_in_replay_mode",
        "guard_live_call",
    ],
    "forkline_es.forkline.core.canon": ["canon", "sha256_hex", "bytes_preview"],
    "forkline_es.forkline.core.types": ["Event", "Run", "Step"],
    "forkline_es.forkline.core.redaction": [
        "RedactionAction", "RedactionConfig", "RedactionPolicy", "RedactionRule", "RegexRedactionRule",
        "create_default_policy", "load_redaction_config",
    ],
    "forkline_es.forkline.core.tool_call": [
        "ToolCallPayload", "ToolCallRecorder", "ToolCallTiming", "record_tool_call",
    ],
    "forkline_es.forkline.core.replay": [
        "ReplayError", "MissingArtifactError", "DeterminismViolationError", "ReplayOrderError",
        "replay_mode", "is_replay_mode_active", "get_replay_run_id", "assert_not_in_replay_mode",
        "guard_live_call",
    ],
    "forkline_es.forkline.artifact": [
        "RunArtifact", "ArtifactEvent", "SchemaVersionError", "migrate_artifact", "register_migration",
    ],
    "forkline_es.forkline.artifact.schema": ["RunArtifact", "ArtifactEvent", "SchemaVersionError"],
    "forkline_es.forkline.artifact.migrate": ["migrate_artifact", "register_migration"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(LAYOUT))
def test_each_forkline_module_has_its_names(module: str) -> None:
    loaded = importlib.import_module(module)
    missing = [name for name in LAYOUT[module] if not hasattr(loaded, name)]
    assert missing == []
    assert set(LAYOUT[module]) <= set(loaded.__all__) | {"StepScope"}


def test_the_top_level_names_are_the_submodules_objects() -> None:
    from forkline_es.forkline.core.redaction import RedactionPolicy
    from forkline_es.forkline.storage.recorder import RunRecorder
    from forkline_es.forkline.storage.store import SQLiteStore

    assert fl.RunRecorder is RunRecorder
    assert fl.SQLiteStore is SQLiteStore
    assert fl.RedactionPolicy is RedactionPolicy


def test_version_constants_are_forkline_0_5_0s() -> None:
    from forkline_es.forkline import version

    assert (fl.FORKLINE_VERSION, fl.SCHEMA_VERSION) == ("0.5.0", "1.0")
    assert (fl.DEFAULT_FORKLINE_VERSION, fl.DEFAULT_SCHEMA_VERSION) == ("0.1.0", "recording_v0")
    assert version.LEGACY_SCHEMA_VERSION == "recording_v0"


def _public(module: object) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == getattr(module, "__name__", None)
    ]


def test_every_forkline_module_and_name() -> None:
    real = load()
    modules = [info.name for info in pkgutil.walk_packages(real.__path__, "forkline.")]
    assert len(modules) > 20
    missing = {}
    for name in modules:
        theirs = importlib.import_module(name)
        mine = importlib.import_module(f"forkline_es.{name}")
        absent = [n for n in _public(theirs) if not hasattr(mine, n)]
        if absent:
            missing[name] = absent
    assert missing == {}
