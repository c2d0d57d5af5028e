"""A run's records as one: every process's blocks, configs and events together, with the rows and
events that a later rewind superseded hidden (they stay on disk), and a fork's parent's history up to
the branch step before its own.

A rewind at time T to step N supersedes every row logged before T with a step above N. Rows are
never deleted, so each block gets a visibility mask instead. A fork branched at step N is much the
same: its parent's rows at N and before come first, those after are not its history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

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


def inherit(
    merged: ProcessRecords, parent: ProcessRecords, step: int
) -> Callable[[list[codec.Block]], list[codec.Block]]:
    """Put ``parent``'s visible rows, events and tables at ``step`` and before ahead of the fork's own
    (``merged``, its rewinds applied). A rewind of the fork to a step before ``step`` cuts the parent's
    history there too. The parent's configs are not the fork's (its own config is; the parent's, as it
    was, is its ``fork`` event's), nor are its rewinds (applied to its rows already). Returns the cut
    for more of the parent's blocks (each process's, for ``Run.process_series``). The parent's blocks
    are copied, never changed: the parent's own reader shares them."""

    cut = min([step, *(e.step for e in merged.events if e.kind == "rewind")])

    def up_to(blocks: list[codec.Block]) -> list[codec.Block]:
        out = []
        for block in blocks:
            keep = block.steps <= cut
            if block.visible is not None:
                keep &= block.visible
            if keep.any():
                out.append(dataclasses.replace(block, visible=keep))
        return out

    merged.blocks[:0] = up_to(parent.blocks)
    merged.events[:0] = [e for e in parent.events if e.step <= cut and e.kind != "rewind"]
    merged.tables[:0] = [t for t in parent.tables if t.step <= cut]
    return up_to


def visible_last_step(blocks: list[codec.Block]) -> int | None:
    """The highest visible step among ``blocks``."""
    steps = [
        int(b.steps[b.visible].max() if b.visible is not None and b.visible.any() else b.steps.max())
        for b in blocks
        if b.steps.size and (b.visible is None or b.visible.any())
    ]
    return max(steps) if steps else None
