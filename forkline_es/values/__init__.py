"""Typed values, canonical JSON and digests: the only encoder and hasher of forkline_es."""

from forkline_es.values._canonical import canonical_json, check_text, decode_json, is_text
from forkline_es.values._digest import is_digest, sha256_digest
from forkline_es.values._file import FileRef
from forkline_es.values._time import (
    Duration,
    Timestamp,
    canonical_timestamp,
    parse_canonical_timestamp,
    time_key,
    utc_now,
)
from forkline_es.values._typed import (
    MAX_DEPTH,
    decode_value,
    decode_value_json,
    encode_value,
    encode_value_json,
)

__all__ = [
    "MAX_DEPTH",
    "Duration",
    "FileRef",
    "Timestamp",
    "canonical_json",
    "canonical_timestamp",
    "check_text",
    "decode_json",
    "decode_value",
    "decode_value_json",
    "encode_value",
    "encode_value_json",
    "is_digest",
    "is_text",
    "parse_canonical_timestamp",
    "sha256_digest",
    "time_key",
    "utc_now",
]
