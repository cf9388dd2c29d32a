"""Keeping the cyclic garbage collector out of bulk object construction.

Decoding or folding tens of thousands of small dicts triggers repeated full collections
that walk every live object; none of these objects form cycles, so the collector only
costs time there (it made a 10,000-step read eight times slower).

Pausing is not enough when the objects outlive the call, as a returned document does:
every container built while paused is still in the youngest generation, so the first
allocation after the pause runs a young collection that walks all of them, and a later
middle-generation collection walks them again (two walks of a 10,000-step document's
230,000 containers cost about 150 ms each here). ``gc_paused(keep=True)`` moves them
straight to the oldest generation, as surviving both collections would, without either
walk. Objects freed by reference counting leave it as from any generation; a cycle the
caller later makes through them is found by the next full collection.

The move takes the whole young generation, not only what was built, and ``gc.freeze()``
zeroes the young count that schedules collections. So the program's young objects are
collected first (``gc.collect(1)``, a walk of a few thousand objects at most); otherwise
its garbage cycles would be promoted uncollected, and a program reading often would never
see a young collection again. A small build is not moved at all: one young collection
walks it for less than the ``gc.collect(1)`` would cost (``decode_document`` decides by
size). The collector's state is process-wide: a thread calling ``gc.freeze()`` between our
two calls would see its freeze undone.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused(*, keep: bool = False) -> Iterator[None]:
    """Pause the collector; ``keep``: what was built is kept (returned), move it to the oldest
    generation on the way out."""
    was_enabled = gc.isenabled()
    # Skipped when the program froze objects itself (unfreezing would hand those back to the
    # collector) or turned the collector off (it then schedules nothing to avoid).
    promote = keep and was_enabled and gc.get_freeze_count() == 0
    if promote:
        gc.collect(1)  # the program's young garbage, collected rather than promoted with the build
    gc.disable()
    try:
        yield
        if promote:
            # freeze() moves every generation to the permanent one and zeroes the young
            # count; unfreeze() moves that into the oldest generation.
            gc.freeze()
            gc.unfreeze()
    finally:
        if was_enabled:
            gc.enable()
