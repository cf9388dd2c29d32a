"""Split a map key into lower-case words, the unit that key rules match on.

Key rules match whole words so that ``token`` never matches ``tokenizer`` and ``auth`` never
matches ``author``; substring matching (Forkline's) masks both.
"""

from __future__ import annotations

import functools
import re

__all__ = ["QUALIFIERS", "key_words", "unqualified"]

# Anything that is not a letter or a digit separates words: `_`, `-`, `.`, spaces, `/`, ...
_SEPARATORS = re.compile(r"[\W_]+")
# Inside one separated part: camelCase and acronym boundaries (APIKey -> API, Key), digit runs,
# and runs of non-ASCII letters, which have no case boundary we could rely on.
_CAMEL_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W_A-Za-z0-9]+")


#: Words that name a form of the word before them, not another thing: ``password_hash`` and
#: ``passwordHash`` hold a password (hashed), ``api_key_b64`` an API key. Other trailing words
#: still name what the value is: ``password_hint``, ``token_count``, ``max_tokens`` are kept.
QUALIFIERS: frozenset[str] = frozenset(
    {
        "hash",
        "hashed",
        "digest",
        "hmac",
        "sha",  # sha1, sha256, ...: digits are not words
        "md",  # md5
        "bcrypt",
        "scrypt",
        "argon",
        "crypt",
        "encrypted",
        "enc",
        "encoded",
        "base",  # base64
        "b",  # b64
        "hex",
        "raw",
        "plain",
        "plaintext",
        "value",
    }
)


@functools.lru_cache(maxsize=8192)
def unqualified(words: tuple[str, ...]) -> tuple[str, ...]:
    """``words`` without their trailing ``QUALIFIERS`` (at least one word is kept)."""
    end = len(words)
    while end > 1 and words[end - 1] in QUALIFIERS:
        end -= 1
    return words[:end]


@functools.lru_cache(maxsize=8192)
def key_words(key: str) -> tuple[str, ...]:
    """The case-folded words of ``key``, digit-only words left out.

    Digit runs are dropped so that ``password2`` and ``api_key_1`` read as ``password`` and
    ``api key``. Cached because the same keys recur in every payload of a run.
    """
    words: list[str] = []
    for part in _SEPARATORS.split(key):
        for word in _CAMEL_WORDS.findall(part):
            if not word.isdigit():
                words.append(word.casefold())
    return tuple(words)
