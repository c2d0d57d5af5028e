"""Reading many runs at once makes hundreds of thousands of small objects (a listing's dicts, one
``Run`` per run, their lookups), none of them in a reference cycle. The cyclic garbage collector
would walk all of them again at each of its passes while they are made: at 10,000 runs that was a
third of a listing's time. ``no_cyclic_gc`` keeps it off while such a batch is made (reference
counting still frees everything as usual)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
