"""Turning a payload argument into a slot of the event body plus the value row to store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from forkline_es.errors import InvalidRequest, InvalidValue
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


def encode_slots(
    args: dict[str, Any], is_sensitive: IsSensitive | None = None, *, dry_run: bool = True
) -> Payloads:
    """Encode every passed payload argument; refuse the whole call on the first bad value.

    A ``Sensitive`` value, or one the store's redaction policy finds sensitive, becomes a
    ``withheld`` slot and nothing of it (not even a digest) is kept. A ``Partial`` (dry
    runs only) keeps its suppressed paths whatever the slot's state.
    """
    slots: dict[str, Slot] = {}
    rows: list[tuple[str, bytes]] = []
    for name, arg in args.items():
        if arg is MISSING:
            continue
        suppressed = None
        if isinstance(arg, Sensitive) and isinstance(arg.value, Partial):
            arg = Partial(Sensitive(arg.value.value), arg.value.suppressed)  # either order
        if isinstance(arg, Partial):
            suppressed = _suppressed(arg.suppressed, f"$.{name}")
            if not dry_run:
                raise InvalidRequest(
                    f"{name}: fe.Partial marks a dry run's partial values, and this run is not a "
                    "dry run (start_run(dry_run=True)); pass the value itself"
                )
            arg = arg.value
        if arg is NOT_RECORDED:
            slots[name] = Slot(state="not-recorded", suppressed=suppressed)
            continue
        try:  # both refuse with a path inside the value: say which slot it is in
            if isinstance(arg, Sensitive) or (is_sensitive is not None and is_sensitive(arg)):
                slots[name] = Slot(state="withheld", suppressed=suppressed)
                continue
            data = encode_value_json(arg)
        except InvalidValue as e:
            raise InvalidValue(e.reason, f"$.{name}{e.path[1:]}") from None
        slots[name] = Slot(state="present", digest=sha256_digest(data), suppressed=suppressed)
        rows.append((name, data))
    return slots, tuple(rows)
