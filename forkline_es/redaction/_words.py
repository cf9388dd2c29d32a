"""Split a map key into lower-case words, the unit that key rules match on.

Key rules match whole words so that ``token`` never matches ``tokenizer`` and ``auth`` never
matches ``author``; substring matching (Forkline's) masks both.
"""

from __future__ import annotations

import functools
import re

__all__ = ["key_words"]

# Anything that is not a letter or a digit separates words: `_`, `-`, `.`, spaces, `/`, ...
_SEPARATORS = re.compile(r"[\W_]+")
# Inside one separated part: camelCase and acronym boundaries (APIKey -> API, Key), digit runs,
# and runs of non-ASCII letters, which have no case boundary we could rely on.
_CAMEL_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W_A-Za-z0-9]+")


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
