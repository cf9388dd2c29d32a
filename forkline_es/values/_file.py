"""File references: the value of kind ``file``, a pointer to content that is not embedded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forkline_es.errors import InvalidValue
from forkline_es.values._digest import is_digest
from forkline_es.values._paths import Refused

__all__ = ["FILE_MEMBERS", "FileRef", "check_file_members", "file_body"]

FILE_MEMBERS = frozenset({"reference", "name", "media_type", "size", "digest"})


def check_file_members(
    reference: object, name: object, media_type: object, size: object, digest: object
) -> None:
    """Raise :class:`Refused` naming the first member outside the file carrier's domain."""
    if type(reference) is not str or not reference:
        raise Refused("file `reference` must be a non-empty string")
    if name is not None and type(name) is not str:
        raise Refused("file `name` must be a string when set")
    if media_type is not None and type(media_type) is not str:
        raise Refused("file `media_type` must be a string when set")
    if size is not None and (type(size) is not int or size < 0):
        raise Refused("file `size` must be a nonnegative int when set")
    if digest is not None and not is_digest(digest):
        raise Refused("file `digest` must be `sha256:` followed by 64 lower-case hex digits")


@dataclass(frozen=True, slots=True)
class FileRef:
    """A reference to a file plus what is known about it; no content is embedded.

    Members left as None are omitted from the typed value, so ``None`` means "not
    recorded", never "empty". Validated on construction, so an invalid FileRef cannot
    reach the log.
    """

    reference: str
    name: str | None = None
    media_type: str | None = None
    size: int | None = None
    digest: str | None = None

    def __post_init__(self) -> None:
        try:
            check_file_members(self.reference, self.name, self.media_type, self.size, self.digest)
        except Refused as refused:
            raise InvalidValue(refused.message, "$") from None


def file_body(ref: FileRef) -> dict[str, Any]:
    """The encoded value of a FileRef: reference plus each member that is set."""
    body: dict[str, Any] = {"reference": ref.reference}
    if ref.name is not None:
        body["name"] = ref.name
    if ref.media_type is not None:
        body["media_type"] = ref.media_type
    if ref.size is not None:
        body["size"] = ref.size
    if ref.digest is not None:
        body["digest"] = ref.digest
    return body
