"""A log row as written and as read, and the hash chain that links a run's rows.

A row's ``digest`` covers its header and its canonical body; ``prev`` is the digest of
the run's previous row. Editing a body, swapping two rows' seq, or deleting a row in
the middle therefore breaks the chain at a precise seq (``store.verify_run``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, Protocol

import msgspec

from forkline_es.errors import StoreError
from forkline_es.log.events import EventBody, decode_body
from forkline_es.log.schema import SLOTS_PER_EVENT

__all__ = ["LOG_COLUMNS", "LogRow", "NewRow", "RowHeader", "row_digest"]

_header: Final = msgspec.json.Encoder()


class RowHeader(Protocol):
    """What a projection folds of a row: its header, never its log position.

    A ``NewRow`` before it is sent (so that an append can fold before the database gives
    the row its position) and a ``LogRow`` read back (a rebuild) both are one.
    """

    @property
    def run_id(self) -> str: ...

    @property
    def seq(self) -> int: ...

    @property
    def entry(self) -> int | None: ...

    @property
    def generation(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def at(self) -> str: ...


class NewRow(msgspec.Struct, frozen=True):
    """An event ready to append: header, canonical body, chain links and payload values."""

    run_id: str
    seq: int
    entry: int | None
    generation: int
    kind: str
    at: str
    key: str
    body: bytes
    digest: str
    prev: str | None
    payloads: tuple[tuple[str, bytes], ...] = ()

    def columns(self) -> tuple[Any, ...]:
        """The log row's columns after ``position`` in ``LOG_COLUMNS`` order, as both
        backends insert them: the body as text (json_each and ``LogRow.body`` read text).
        More payload values than an event has slots is a StoreError, before anything is sent."""
        if len(self.payloads) > SLOTS_PER_EVENT:
            raise StoreError(
                f"an event carries at most {SLOTS_PER_EVENT} payload values, not {len(self.payloads)}"
            )
        return (
            self.run_id, self.seq, self.entry, self.generation, self.kind, self.at, self.key,
            self.body.decode(), self.digest, self.prev,
        )  # fmt: skip


#: The ``log`` columns in ``LogRow``'s field order: ``LogRow(*row)`` of a ``SELECT`` of these.
LOG_COLUMNS: Final = "position, run_id, seq, entry, generation, kind, at, key, body, digest, prev"


class LogRow(msgspec.Struct, frozen=True):
    """One stored event. ``event()`` decodes the body with the union's one decoder."""

    position: int
    run_id: str
    seq: int
    entry: int | None
    generation: int
    kind: str
    at: str
    key: str
    body: str
    digest: str
    prev: str | None

    def event(self) -> EventBody:
        return decode_body(self.body)


def row_digest(
    run_id: str,
    seq: int,
    entry: int | None,
    generation: int,
    kind: str,
    at: str,
    key: str,
    prev: str | None,
    body: bytes | str,
) -> str:
    """``sha256:`` over the JSON array of the header fields followed by the body bytes."""
    if isinstance(body, str):
        body = body.encode()
    h = hashlib.sha256(_header.encode((run_id, seq, entry, generation, kind, at, key, prev)))
    h.update(b"\n")
    h.update(body)
    return "sha256:" + h.hexdigest()
