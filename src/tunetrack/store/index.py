"""What listings read of a run in object storage: one small index object per writing process,
rewritten at every upload (its time is also the process's heartbeat), and compact objects that hold
many ended entries at once.

``.index/<run id>/<proc>.json`` and ``.index/_compact/<time>.json``, relative to the store's URL.
"""

from __future__ import annotations

import json
from typing import Any

INDEX = ".index"
COMPACT = f"{INDEX}/_compact"


def dumps(data: Any) -> bytes:
    return json.dumps(data, allow_nan=True, default=str).encode()


#: what an index entry keeps of a process's metadata
_ENTRY_META = ("host", "pid", "role", "rank", "start", "upload_interval", "resumed")


def index_entry(
    run: dict[str, Any],
    proc: str,
    meta: dict[str, Any],
    last: dict[str, Any] | None,
    end: dict[str, Any] | None,
    beat: float,
    upload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What listings read of one process of a run: the run's identity, where the process runs, its
    last values, how it ended, when it last showed it was alive."""
    return {
        "run": {k: run.get(k) for k in ("id", "name", "project", "tags", "created")},
        "proc": proc,
        "meta": {k: meta.get(k) for k in _ENTRY_META},
        "last": last,
        "end": end,
        "beat": beat,
        "upload": upload,
    }
