"""tunetrack's system-metric keys under another tracker's own names: each tracker that samples the
machine itself (MLflow, trackio, Comet) has names and units of its own, and a mirror sends tunetrack's
samples under them, so that its users find them where its own monitor puts them. One lookup for all
of them; each backend holds only its table."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_GPU = re.compile(r"gpu\.(\d+)\.(.+)")

#: tunetrack's key pattern (``{i}``: a GPU's index) -> (the tracker's name, the factor to its unit)
Table = Mapping[str, tuple[str, float]]


def renamed(key: str, table: Table) -> tuple[str, float] | None:
    """The tracker's name for system key ``key`` and the factor to its unit, from ``table``, or None
    for a key the tracker has no name for. A per-GPU key (``gpu.0.util``) is looked up as its pattern
    (``gpu.{i}.util``) and the index is put into the name."""
    gpu = _GPU.fullmatch(key)
    pattern, index = (f"gpu.{{i}}.{gpu.group(2)}", gpu.group(1)) if gpu else (key, "")
    found = table.get(pattern)
    return None if found is None else (found[0].replace("{i}", index), found[1])


def converted(values: Mapping[str, Any], name: Callable[[str], tuple[str, float]]) -> dict[str, float]:
    """A row's numeric system values under the tracker's names (``name``: a backend's own lookup),
    scaled to its units; the rest is left out."""
    out = {}
    for key, value in values.items():
        if isinstance(value, int | float):
            renamed_key, scale = name(key)
            out[renamed_key] = value * scale
    return out
