"""``import forkline_es`` loads the recording path only; every public name still resolves (issue 22)."""

from __future__ import annotations

import subprocess
import sys

import forkline_es as fe

_HEAVY = (
    "forkline_es.replay",
    "forkline_es.testing",
    "forkline_es.compat.recorder",
    "forkline_es.cli",
    "forkline_es.forkline",
    "structlog",
    "psycopg",
    "hypothesis",
)


def test_import_leaves_the_heavy_parts_unloaded() -> None:
    code = "import sys, forkline_es; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()
    )
    assert "forkline_es.store" in loaded
    assert not loaded & set(_HEAVY), loaded & set(_HEAVY)


def test_every_public_name_resolves_and_is_cached() -> None:
    for name in fe.__all__:
        value = getattr(fe, name)
        assert value is getattr(fe, name)
        assert name in dir(fe)
    assert fe.Replayer.__module__.startswith("forkline_es.replay")
    assert fe.testing.__name__ == "forkline_es.testing"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        fe.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert "NoSuchName" in str(e)
    else:
        raise AssertionError("fe.NoSuchName resolved")
