"""Turning a payload argument into a slot of the event body plus the value row to store.

Every stored payload is at most the store's ``max_payload_bytes`` (decisions.md, "Added
in the second round"): what is measured is the stored text, the canonical JSON of the
typed value (of the redacted plain JSON for a ``RunRecorder`` payload). A container whose
smallest possible encoding is already over the limit is refused before it is encoded, so
a huge list is not first blown up into its typed form; the exact size decides the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from forkline_es.errors import InvalidRequest, InvalidValue, shown
from forkline_es.log.events import Slot
from forkline_es.recording.markers import MISSING, NOT_RECORDED, Partial, Sensitive
from forkline_es.values import encode_value_json, is_text, sha256_digest
from forkline_es.vocabulary import SLOT_CLASS

__all__ = [
    "BODY_ALLOWANCE",
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "EARLY",
    "SIZED",
    "SLOT_CLASS",
    "Payloads",
    "check_least_size",
    "check_payload_limit",
    "encode_slots",
    "least_json_size",
    "too_large",
]

#: The default of ``Store.open(max_payload_bytes=...)``: 16 MiB of canonical JSON per payload.
DEFAULT_MAX_PAYLOAD_BYTES: Final = 16 * 1024 * 1024
#: An event body (the call's own fields: reasons, codes, manifest facts) may exceed the
#: payload limit by this much, room for what the engine adds (environment, slot digests).
BODY_ALLOWANCE: Final = 64 * 1024
#: SQLite's default maximum length of one value (SQLITE_MAX_LENGTH): no payload can be longer.
_LARGEST_LIMIT: Final = 1_000_000_000
#: A list index in a suppressed path is stored in the event body: SQLite's 64-bit range.
_LARGEST_INDEX: Final = 2**63 - 1
#: The shortest typed value is ``{"kind":"int","value":0}``.
_LEAST_TYPED: Final = 24


#: (slots for the event body, (slot, canonical typed-value JSON) rows for the payload table)
Payloads = tuple[dict[str, Slot], tuple[tuple[str, bytes], ...]]

IsSensitive = Callable[[Any], bool]


def _suppressed(paths: list[list[Any]], where: str) -> list[list[str | int]]:
    if not paths:
        raise InvalidValue("Partial needs a nonempty list of suppressed paths", where)
    for i, path in enumerate(paths):
        for j, part in enumerate(path):
            if not (type(part) is str and is_text(part + "_")) and (
                type(part) is not int or not 0 <= part <= _LARGEST_INDEX
            ):
                raise InvalidValue(
                    "a suppressed path holds map keys (str of Unicode text) and list indices "
                    f"(int from 0 to 2**63 - 1), not {shown(part)}",
                    f"{where}.suppressed[{i}][{j}]",
                )
    return paths


def check_payload_limit(limit: object) -> int:
    """``max_payload_bytes`` as given to ``Store.open``: an int from 1 to 1,000,000,000."""
    if type(limit) is not int or not 1 <= limit <= _LARGEST_LIMIT:
        raise InvalidRequest(
            f"max_payload_bytes is a number of bytes from 1 to {_LARGEST_LIMIT:,} (SQLite's "
            f"largest value), not {shown(limit)}; the default is {DEFAULT_MAX_PAYLOAD_BYTES:,}"
        )
    return limit


def _too_large(slot: str, size: str, limit: int) -> InvalidValue:
    return InvalidValue(
        f"payload `{slot}` is {size} bytes of canonical JSON, over this store's limit of "
        f"{limit:,} bytes (Store.open(max_payload_bytes=...)); keep bulky content in an "
        "artifact (run.add_artifact) and record a FileRef to it",
        f"$.{slot}",
    )


def too_large(slot: str, data: bytes, limit: int) -> InvalidValue:
    """The refusal of payload ``slot`` whose stored text ``data`` is over ``limit`` bytes.

    ``Run._record``, the one append path, tests ``len(data) > limit`` for every payload and
    raises this: a call per payload would be a measurable part of an append.
    """
    return _too_large(slot, f"{len(data):,}", limit)


#: The types whose least encoding ``least_json_size`` can bound above zero.
SIZED: Final = frozenset((list, tuple, dict, str))
#: Shorter values are not worth bounding before they are encoded (``check_least_size``):
#: the check after encoding refuses them just as well, and most payloads are short. Callers
#: test ``type(v) in SIZED and len(v) > EARLY`` themselves: a call less per append.
EARLY: Final = 4096


def least_json_size(value: object, typed: bool = True) -> int:
    """A lower bound of the canonical JSON size of ``value`` (typed or plain), in O(1).

    Each element of a list or map takes at least a typed value (or one character plain)
    and a separator; a string takes at least one byte per character.
    """
    t = type(value)
    if t is list or t is tuple or t is dict:
        return len(value) * (_LEAST_TYPED + 1 if typed else 2)  # type: ignore[arg-type]
    if t is str:
        return len(value)  # type: ignore[arg-type]
    return 0


def check_least_size(slot: str, value: object, limit: int, typed: bool = True) -> None:
    """Refuse before encoding when even the smallest encoding of ``value`` is over ``limit``."""
    least = least_json_size(value, typed)
    if least > limit:
        raise _too_large(slot, f"at least {least:,}", limit)


def encode_slots(
    args: dict[str, Any],
    is_sensitive: IsSensitive | None = None,
    *,
    dry_run: bool = True,
    limit: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> Payloads:
    """Encode every passed payload argument; refuse the whole call on the first bad value.

    A ``Sensitive`` value, or one the store's redaction policy finds sensitive, becomes a
    ``withheld`` slot and nothing of it (not even a digest) is kept. A ``Partial`` (dry
    runs only) keeps its suppressed paths whatever the slot's state. A container whose
    least encoding is over ``limit`` bytes is refused before it is encoded; the exact size
    of every stored value is checked where every append passes (``Run._record``).
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
        except InvalidValue as e:
            raise InvalidValue(e.reason, f"$.{name}{e.path[1:]}") from None
        if type(arg) in SIZED and len(arg) > EARLY:
            check_least_size(name, arg, limit)
        try:
            data = encode_value_json(arg)
        except InvalidValue as e:
            raise InvalidValue(e.reason, f"$.{name}{e.path[1:]}") from None
        slots[name] = Slot(state="present", digest=sha256_digest(data), suppressed=suppressed)
        rows.append((name, data))
    return slots, tuple(rows)
