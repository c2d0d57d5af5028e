"""A writing process's records in object storage: chunk objects, each holding a byte range of them.

A chunk is named ``<start>-<end>.ttr`` (hex) after the bytes ``[start, end)`` of its process's records
that it holds (``<start>-<end>.console``: of its console); chunks start and end on record boundaries, so each is self-delimiting. Several chunks
may cover the same bytes (a merged chunk and the ones it replaces, briefly): readers take, at each
position, the longest chunk that starts there.
"""

from __future__ import annotations

import re

from .layout import DATA_SUFFIX

_CHUNK = re.compile(r"^([0-9a-f]{16})-([0-9a-f]{16})(\.\w+)$")


def chunk_name(start: int, end: int, suffix: str = DATA_SUFFIX) -> str:
    """The name of a chunk of a process's records (``suffix``: of its console, ``CONSOLE_SUFFIX``)."""
    return f"{start:016x}-{end:016x}{suffix}"


def parse_chunk(name: str, suffix: str = DATA_SUFFIX) -> tuple[int, int] | None:
    m = _CHUNK.match(name)
    return (int(m[1], 16), int(m[2], 16)) if m and m[3] == suffix else None


def cover(
    chunks: list[tuple[int, int]], preferred: set[tuple[int, int]] | frozenset = frozenset()
) -> list[tuple[int, int]]:
    """The chunks that hold bytes 0.. in order, without gaps: at each position the longest chunk
    starting there (a ``preferred`` one, such as one already downloaded, when it is there)."""
    by_start: dict[int, list[tuple[int, int]]] = {}
    for start, end in chunks:
        if end > start:
            by_start.setdefault(start, []).append((start, end))
    out, pos = [], 0
    while pos in by_start:
        options = by_start[pos]
        kept = [c for c in options if c in preferred]
        chosen = max(kept or options, key=lambda c: c[1])
        out.append(chosen)
        pos = chosen[1]
    return out
