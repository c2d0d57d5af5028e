"""Small JSON files that many processes read while one writes: written atomically, read forgivingly; and
NumPy's floats as JSON lists, which hold no NaN."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, data: Any) -> None:
    """Write via a temporary file and rename, so readers see the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, allow_nan=True, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file's object, or None if it is missing or unreadable (a reader never fails on one file)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def finite_list(values: Any) -> list[float | None]:
    """A NumPy array of floats as a JSON list, NaN and ±Inf as None: what a page draws as a gap, a
    cell with no number (JSON has no NaN; the dashboard's answers and the report's data both say so)."""
    return [v if math.isfinite(v) else None for v in values.tolist()]
