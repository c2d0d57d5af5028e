"""What a reader hands back to its store of the runs it read from their own files
(``Store.keep_listed``): a folder store takes the ended ones into its index (``store.folder_index``),
so the next listing does not read them again. The shape is the index's (``folder_index.read_entry``).
"""

from __future__ import annotations

from typing import Any

from .processes import LISTED_META
from .run import Run


def entry(run: Run) -> dict[str, Any] | None:
    """What the store may keep of ``run``, or None when the run was answered from the index already.
    The store keeps it only where every process ended (``folder_index.settled``)."""
    if run.folder.indexed():
        return None
    return {
        "run": run.stored,
        "processes": [
            {
                "name": p.name,
                "meta": {k: p.meta.get(k) for k in LISTED_META if k in p.meta},
                "end": {k: v for k, v in p.end.items() if k != "config"} if p.end is not None else None,
                "bytes": run.folder.data_size(p.name),
            }
            for p in run.processes
        ],
        "edits": [[name, body] for name, body in run.folder.edits()],
    }
