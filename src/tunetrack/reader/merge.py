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
from dataclasses import dataclass
from typing import Any

from ..store import codec
from .records import ProcessRecords

#: the step no rewind cuts below
NO_CUT = 2**63 - 1


@dataclass
class History:
    """A run's history as a fork inherits it: its visible rows (each writing process's blocks, copied
    with their own masks), events and tables of samples, in logging order."""

    blocks: dict[str, list[codec.Block]]
    events: list[codec.EventRecord]
    tables: list[codec.TableRecord]


def _cuts(rewinds: list[tuple[float, int]]) -> Callable[[Any], Any]:
    """For a time (or an array of times): the smallest step of the rewinds after it (``NO_CUT`` when
    none), ``rewinds`` being ``(time, step)`` in time order."""
    import numpy as np

    times = np.array([t for t, _ in rewinds], dtype=np.float64)
    # cut[i]: the smallest rewind step among rewinds i.. (those later than a row at index i)
    cut = np.minimum.accumulate(np.array([s for _, s in rewinds] + [NO_CUT], dtype=np.int64)[::-1])[::-1]
    return lambda at: cut[np.searchsorted(times, at, side="right")]


def apply_rewinds(merged: ProcessRecords) -> None:
    """Set each block's visibility mask and drop superseded events and sample tables (rewinds
    themselves stay)."""
    rewinds = sorted((e.time, e.step) for e in merged.events if e.kind == "rewind")
    if rewinds:
        cut = _cuts(rewinds)
        for block in merged.blocks:
            block.visible = block.steps <= cut(block.times)
        merged.events = [e for e in merged.events if e.kind == "rewind" or e.step <= cut(e.time)]
        merged.tables = [t for t in merged.tables if t.step <= cut(t.time)]
    merged.events.sort(key=lambda e: e.time)
    merged.tables.sort(key=lambda t: t.time)
    merged.configs.sort(key=lambda c: c.time)


def as_of(own: History, until: float) -> History:
    """``own`` (a run's own records, no mask applied) as it read at ``until``: what a fork that began
    then inherits, whatever the run did later. Its rewinds up to ``until`` apply; one after it (the
    run resumed from an earlier step once the fork had begun) neither hides what the fork inherited
    nor lets in what was logged after it (told apart on the run's own clock)."""
    import numpy as np

    rewinds = sorted((e.time, e.step) for e in own.events if e.kind == "rewind")
    cut = _cuts([r for r in rewinds if r[0] <= until])
    later = min((t for t, _ in rewinds if t > until), default=np.inf)
    blocks = {
        proc: [
            dataclasses.replace(b, visible=keep)
            for b in blocks
            if (keep := (b.steps <= cut(b.times)) & (b.times < later)).any()
        ]
        for proc, blocks in own.blocks.items()
    }
    events = [e for e in own.events if e.time < later and (e.kind == "rewind" or e.step <= cut(e.time))]
    tables = [t for t in own.tables if t.time < later and t.step <= cut(t.time)]
    return History(blocks, sorted(events, key=lambda e: e.time), sorted(tables, key=lambda t: t.time))


def up_to(history: History, step: int) -> History:
    """What a fork branched at ``step`` inherits of its parent's ``history``: its rows, events and
    tables at ``step`` and before (the blocks copied, never changed: the parent's reader shares them).
    Not its rewinds (applied to its rows already), nor its configs (the fork's config is its own)."""
    blocks = {
        proc: [
            dataclasses.replace(b, visible=keep)
            for b in blocks
            if (keep := (b.steps <= step) & (b.visible if b.visible is not None else True)).any()
        ]
        for proc, blocks in history.blocks.items()
    }
    events = [e for e in history.events if e.step <= step and e.kind != "rewind"]
    return History(blocks, events, [t for t in history.tables if t.step <= step])


def branch_step(step: int, events: list[codec.EventRecord]) -> int:
    """The last step a fork branched at ``step`` inherits: a rewind of the fork to an earlier step
    (its ``events``) cuts its parent's history there too."""
    return min([step, *(e.step for e in events if e.kind == "rewind")])


def visible_last_step(blocks: list[codec.Block]) -> int | None:
    """The highest visible step among ``blocks``."""
    steps = [
        int(b.steps[b.visible].max() if b.visible is not None and b.visible.any() else b.steps.max())
        for b in blocks
        if b.steps.size and (b.visible is None or b.visible.any())
    ]
    return max(steps) if steps else None
