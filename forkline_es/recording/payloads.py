"""Turning a payload argument into a slot of the event body plus the value row to store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from forkline_es.errors import InvalidValue
from forkline_es.log.events import Slot
from forkline_es.recording.markers import MISSING, NOT_RECORDED, Partial, Sensitive
from forkline_es.values import encode_value_json, sha256_digest

__all__ = ["SLOT_CLASS", "Payloads", "encode_slots"]

#: Slot name -> payload class (decisions.md, Payload slots).
SLOT_CLASS: Final[dict[str, str]] = {
    "inputs": "inputs",
    "trigger": "inputs",
    "outputs": "outputs",
    "arguments": "arguments",
    "result": "results",
    "details": "results",
    "binding": "results",
    "event": "events",
}

_WITHHELD: Final = Slot(state="withheld")
_NOT_RECORDED: Final = Slot(state="not-recorded")

#: (slots for the event body, (slot, canonical typed-value JSON) rows for the payload table)
Payloads = tuple[dict[str, Slot], tuple[tuple[str, bytes], ...]]

IsSensitive = Callable[[Any], bool]


def _suppressed(paths: list[list[Any]], where: str) -> list[list[str | int]]:
    if not paths:
        raise InvalidValue("Partial needs a nonempty list of suppressed paths", where)
    for i, path in enumerate(paths):
        for j, part in enumerate(path):
            if type(part) is not str and (type(part) is not int or part < 0):
                raise InvalidValue(
                    "a suppressed path holds map keys (str) and list indices (int >= 0)",
                    f"{where}.suppressed[{i}][{j}]",
                )
    return paths


def encode_slots(args: dict[str, Any], is_sensitive: IsSensitive | None = None) -> Payloads:
    """Encode every passed payload argument; refuse the whole call on the first bad value.

    A ``Sensitive`` value, or one the store's redaction policy finds sensitive, becomes a
    ``withheld`` slot and nothing of it (not even a digest) is kept.
    """
    slots: dict[str, Slot] = {}
    rows: list[tuple[str, bytes]] = []
    for name, arg in args.items():
        if arg is MISSING:
            continue
        if arg is NOT_RECORDED:
            slots[name] = _NOT_RECORDED
            continue
        if isinstance(arg, Sensitive):
            slots[name] = _WITHHELD
            continue
        suppressed = None
        if isinstance(arg, Partial):
            suppressed = _suppressed(arg.suppressed, f"$.{name}")
            arg = arg.value
            if isinstance(arg, Sensitive):
                slots[name] = Slot(state="withheld", suppressed=suppressed)
                continue
        if is_sensitive is not None and is_sensitive(arg):
            slots[name] = Slot(state="withheld", suppressed=suppressed)
            continue
        try:
            data = encode_value_json(arg)
        except InvalidValue as e:
            raise InvalidValue(e.reason, f"$.{name}{e.path[1:]}") from None
        slots[name] = Slot(state="present", digest=sha256_digest(data), suppressed=suppressed)
        rows.append((name, data))
    return slots, tuple(rows)
