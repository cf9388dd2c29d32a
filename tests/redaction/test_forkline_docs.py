"""What docs/forkline.md says about redaction and payload refusals stays true."""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
from forkline_es.redaction import DEFAULT_KEYS, DEFAULT_MASK, RedactionPolicy

DOC = (Path(__file__).resolve().parents[2] / "docs" / "forkline.md").read_text(encoding="utf-8")
DEFAULT = RedactionPolicy.default()


def _names(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _section(start: str, end: str) -> str:
    begin = DOC.index(start) + len(start)
    return DOC[begin : DOC.index(end, begin)]


def test_the_docs_list_the_default_keys() -> None:
    listed = _names(_section("`forkline_es.redaction.DEFAULT_KEYS`:", ". So "))
    assert listed == list(DEFAULT_KEYS)


def test_the_docs_examples_of_masked_and_kept_keys_hold() -> None:
    masked = _names(_section("DEFAULT_KEYS`:", " are masked"))[len(DEFAULT_KEYS) :]
    kept = _names(_section(" are masked, and ", " are kept"))
    assert masked and kept
    for key in masked:
        assert DEFAULT.redact({key: "v"}) == {key: DEFAULT_MASK}, key
    for key in kept:
        assert DEFAULT.redact({key: "v"}) == {key: "v"}, key


class Role(str, enum.Enum):  # noqa: UP042 - the mixin form, as code older than StrEnum has it
    USER = "user"


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


ENUM_PAYLOADS: list[tuple[dict[Any, Any], dict[str, Any], str]] = [
    ({"role": Role.USER}, {"role": "user"}, "$<key 0>"),
    ({"colour": Colour.RED}, {"colour": "red"}, "$<key 0>"),
    ({"level": Level.HIGH}, {"level": 3}, "$<key 0>"),
    ({Role.USER: "hi"}, {"user": "hi"}, "$<key 0>"),
    ({"n": {Colour.RED: "x"}}, {"n": {"red": "x"}}, "$<key 0><key 0>"),
]


def test_the_docs_list_enum_members_as_a_difference() -> None:
    (row,) = [line for line in DOC.splitlines() if line.startswith("|") and "Enum" in line]
    assert "`invalid-value`" in row and "`.value`" in row


@pytest.mark.parametrize(("payload", "plain", "where"), ENUM_PAYLOADS)
def test_enum_members_are_refused_and_their_values_recorded(
    payload: dict[Any, Any], plain: dict[str, Any], where: str
) -> None:
    with fe.RunRecorder(":memory:") as r:
        run_id = r.start_run("x.py")
        with pytest.raises(fe.InvalidValue) as info:
            r.log_event(run_id, "input", payload)
        assert info.value.path == where
        assert r.get_events(run_id) == []
        r.log_event(run_id, "input", plain)  # passing `.value` is what the docs advise
        assert r.get_events(run_id)[0]["payload"] == plain
