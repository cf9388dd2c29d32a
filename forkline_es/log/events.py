"""The log's whole vocabulary: every event kind, as frozen msgspec Structs in one tagged union.

An event body is what a caller said, nothing derived: the row around it (``LogRow``)
carries the run, the per-run ``seq``, the entry seq, the generation, the time and the
hash chain. Payload *values* never live in a body; a body names each payload slot with
its state (and the digest of a present value), and the value sits in the ``payload``
table so that retention can remove it while the event stays immutable.

Schema evolution follows msgspec's rules: a new field gets a default, an existing
field's type never changes, a breaking change is a new tag.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

__all__ = [
    "ENTRY_KINDS",
    "ActionInvoked",
    "ActionResult",
    "ArtifactAdded",
    "ChildStarted",
    "Event",
    "EventBody",
    "ForklineLogged",
    "ManifestRecorded",
    "Observed",
    "PayloadsRemoved",
    "Recovered",
    "RunConcluded",
    "RunHeld",
    "RunResumed",
    "RunStarted",
    "RunSuspended",
    "Slot",
    "StepBegun",
    "StepEnded",
    "decode_body",
    "encode_body",
]

SlotState = Literal["present", "withheld", "not-recorded"]


class Slot(msgspec.Struct, frozen=True, omit_defaults=True):
    """A payload slot as recorded: its state, the digest of a present value, dry-run paths."""

    state: SlotState
    digest: str | None = None
    suppressed: list[list[str | int]] | None = None


Slots = dict[str, Slot]


class Event(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True):
    """Base of every event body. ``type`` is the tag; ``LogRow.kind`` repeats it."""


class RunStarted(Event, tag="run-started", frozen=True):
    workflow: str
    standard: str
    name: str | None = None
    dry_run: bool = False
    parent: str | None = None
    predecessor: str | None = None
    pins: dict[str, str] | None = None
    env: dict[str, str] | None = None
    slots: Slots = {}
    #: string labels given at start (filters of ``list_runs``); never changed afterwards
    labels: dict[str, str] | None = None


class StepBegun(Event, tag="step-begun", frozen=True):
    path: str
    slots: Slots = {}


class ActionInvoked(Event, tag="action-invoked", frozen=True):
    path: str
    attempt: int
    operation: str
    artifact: str
    dispatch: str
    slots: Slots = {}


class ActionResult(Event, tag="action-result", frozen=True):
    path: str
    attempt: int
    dispatch: str
    code: str | None = None
    slots: Slots = {}


class StepEnded(Event, tag="step-ended", frozen=True):
    path: str
    outcome: str
    code: str | None = None
    branch: dict[str, Any] | None = None
    slots: Slots = {}


class ChildStarted(Event, tag="child-started", frozen=True):
    path: str
    child: str


class RunSuspended(Event, tag="run-suspended", frozen=True):
    reason: str | None = None


class RunHeld(Event, tag="run-held", frozen=True):
    code: str | None = None
    step: str | None = None
    reason: str | None = None


class RunResumed(Event, tag="run-resumed", frozen=True):
    pass


class Recovered(Event, tag="recovered", frozen=True):
    supersedes: list[int] = []


class RunConcluded(Event, tag="run-concluded", frozen=True):
    status: str
    path: str | None = None
    code: str | None = None
    reason: str | None = None
    slots: Slots = {}


class PayloadsRemoved(Event, tag="payloads-removed", frozen=True):
    """Retention reduced payloads: ``removed`` lists ``[position, slot]`` pairs."""

    removed: list[tuple[int, str]]
    policy: str
    reason: str | None = None


class ArtifactAdded(Event, tag="artifact-added", frozen=True):
    name: str
    path: str
    sha256: str
    size_bytes: int
    kind: str
    content_type: str | None = None
    step: str | None = None


class ManifestRecorded(Event, tag="manifest-recorded", frozen=True):
    facts: dict[str, Any]
    digest: str
    unknown_fields: list[str] = []
    complete: bool = False
    path: str | None = None  # manifest.json, relative to the store's artifact folder


class Observed(Event, tag="observed", frozen=True):
    name: str
    value: float | int
    unit: str | None = None
    step: str | None = None


class ForklineLogged(Event, tag="forkline-logged", frozen=True):
    """A Forkline ``log_event``; its payload is slot ``payload`` (plain JSON, not typed).

    ``step``: the step path of an event Forkline's step store (``SQLiteStore.append_event``,
    the ``Tracer``) recorded inside a step; absent for ``RunRecorder`` events.
    """

    event_type: str
    slots: Slots = {}
    step: str | None = None


#: The prefix of the key ``RunRecorder`` gives each ``log_event``: unique to the recorder and
#: the call, so it is never asked again and a run's state need not remember it.
ONE_OFF_KEY: Final = "forkline:"


EventBody = (
    RunStarted
    | StepBegun
    | ActionInvoked
    | ActionResult
    | StepEnded
    | ChildStarted
    | RunSuspended
    | RunHeld
    | RunResumed
    | Recovered
    | RunConcluded
    | PayloadsRemoved
    | ArtifactAdded
    | ManifestRecorded
    | Observed
    | ForklineLogged
)

#: Event kinds that are entries of the run record document, and the entry kind they map to.
ENTRY_KINDS: Final[dict[str, str]] = {
    "run-started": "start",
    "step-begun": "step",
    "action-invoked": "invoke",
    "action-result": "result",
    "step-ended": "step",
    "child-started": "child",
    "recovered": "recovery",
    "run-concluded": "conclude",
}

_encoder: Final = msgspec.json.Encoder(order="sorted")
_decoder: Final = msgspec.json.Decoder(EventBody)


def encode_body(event: Event) -> bytes:
    """Canonical JSON of an event body (sorted members), as stored and hashed."""
    return _encoder.encode(event)


def decode_body(data: bytes | str) -> EventBody:
    """One long-lived decoder for the whole union (msgspec perf-tips)."""
    return _decoder.decode(data)


def kind_of(event: Event) -> str:
    """The tag of an event body, which is the log row's ``kind``."""
    return str(event.__struct_config__.tag)
