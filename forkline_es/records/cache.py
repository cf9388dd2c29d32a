"""An in-process cache of concluded runs' document bytes, keyed by the run's last position.

Why: a concluded run's record is read again and again (a UI, a diff, an export) and never
changes unless an event of the run is appended (payloads removed, an artifact) or its
rows go (eviction refuses the read before the cache is asked). Building its document
joins thousands of stored fragments and resolves every payload reference; the cache keeps
the finished canonical text (UTF-8 bytes: what an export returns and a decode reads
fastest), checked on each read against the run's last log position
read in the same snapshot, so a hit is one index seek plus the decode the caller needs
anyway, and another process's append to the run is seen as a miss.

It writes nothing; the first read of a run in a process takes the stored text
(``records.stored``) or builds it. Bounded by bytes held (least recently read first out).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Final

__all__ = ["DEFAULT_CACHE_CHARS", "DocumentCache"]

#: Bytes of document text kept per store (64 MB at most).
DEFAULT_CACHE_CHARS: Final = 64 << 20


class DocumentCache:
    """run_id -> (last log position, canonical document text in UTF-8); see the module docstring."""

    def __init__(self, limit: int = DEFAULT_CACHE_CHARS) -> None:
        self.limit = limit
        self._texts: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        #: Reads served from the cache and reads that built the text (tests, benchmarks).
        self.hits = 0
        self.misses = 0

    def get(self, run_id: str, position: int) -> bytes | None:
        """The text cached for the run at ``position``, or None (counted as a miss)."""
        with self._lock:
            kept = self._texts.get(run_id)
            if kept is None or kept[0] != position:
                self.misses += 1
                return None
            self._texts.move_to_end(run_id)
            self.hits += 1
            return kept[1]

    def put(self, run_id: str, position: int, text: bytes) -> None:
        if len(text) > self.limit:
            return
        with self._lock:
            old = self._texts.pop(run_id, None)
            if old is not None:
                self._held -= len(old[1])
            self._texts[run_id] = (position, text)
            self._held += len(text)
            while self._held > self.limit:
                _, (_, dropped) = self._texts.popitem(last=False)
                self._held -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._texts.clear()
            self._held = 0
