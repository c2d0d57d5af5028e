"""A run's records as one: every process's blocks, configs and events together, with the rows and
events that a later rewind superseded hidden (they stay on disk).

A rewind at time T to step N supersedes every row logged before T with a step above N. Rows are
never deleted, so each block gets a visibility mask instead.
"""

from __future__ import annotations

from ..store import codec
from .records import ProcessRecords


def apply_rewinds(merged: ProcessRecords) -> None:
    """Set each block's visibility mask and drop superseded events and sample tables (rewinds
    themselves stay)."""
    import numpy as np

    rewinds = sorted((e.time, e.step) for e in merged.events if e.kind == "rewind")
    if rewinds:
        times = np.array([t for t, _ in rewinds])
        # cut[i]: the smallest rewind step among rewinds i.. (those later than a row at index i)
        cut = np.minimum.accumulate(np.array([s for _, s in rewinds] + [np.iinfo(np.int64).max])[::-1])[::-1]
        for block in merged.blocks:
            block.visible = block.steps <= cut[np.searchsorted(times, block.times, side="right")]
        merged.events = [
            e
            for e in merged.events
            if e.kind == "rewind" or e.step <= cut[np.searchsorted(times, e.time, side="right")]
        ]
        merged.tables = [
            t for t in merged.tables if t.step <= cut[np.searchsorted(times, t.time, side="right")]
        ]
    merged.events.sort(key=lambda e: e.time)
    merged.tables.sort(key=lambda t: t.time)
    merged.configs.sort(key=lambda c: c.time)


def visible_last_step(blocks: list[codec.Block]) -> int | None:
    """The highest visible step among ``blocks``."""
    steps = [
        int(b.steps[b.visible].max() if b.visible is not None and b.visible.any() else b.steps.max())
        for b in blocks
        if b.steps.size and (b.visible is None or b.visible.any())
    ]
    return max(steps) if steps else None
