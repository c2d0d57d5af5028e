"""Launching a run's Parquet copy once its last process has recorded its end. The copy itself is
``manage.parquet``'s (the same code ``tunetrack parquet`` runs); what this module owns is where it
runs, so that finishing a run never loads pyarrow or NumPy into a training process that had not.
"""

from __future__ import annotations

import sys

from .. import settings
from .._warnings import warn_once
from ..store.base import Store

#: what the child process runs: the same function, in a process of its own
_CHILD = "import sys; from tunetrack.manage.parquet import after_finish_at; after_finish_at(*sys.argv[1:])"


def write_copy(store: Store, run_id: str) -> None:
    """The run's Parquet copy (``manage.parquet.after_finish``), called on the writer's thread once the
    end is recorded (``finish()`` waits for it; training does not). In a process that already loaded
    pyarrow (a Hugging Face ``datasets`` one) it is written here; in one that did not, a child process
    that ``finish()`` does not wait for writes it (starting Python and pyarrow there costs a second).
    Where pyarrow is not installed, or ``TUNETRACK_PARQUET=0``, nothing happens. A failure here is
    one warning; the child's are silent: the records are the source of truth, ``tunetrack query``
    reads them where the copy is missing or stale, and ``tunetrack parquet`` writes it later."""
    if not settings.parquet_enabled():
        return
    try:
        if "pyarrow" in sys.modules:
            from ..manage.parquet import after_finish

            after_finish(store, run_id)
        else:
            _in_child(str(store), run_id)
    except Exception as exc:
        warn_once(
            f"{run_id}:parquet",
            f"run {run_id}: its Parquet copy was not written ({exc!r}); the records are complete, "
            "and `tunetrack parquet` writes it",
        )


def _in_child(dir: str, run_id: str) -> None:
    """``manage.parquet.after_finish`` in a child Python, not waited for (in a session of its own: a
    Ctrl-C of the terminal does not stop it half-way); skipped where pyarrow is not installed (looked
    up without importing it)."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("pyarrow") is None:
        return
    subprocess.Popen(
        [sys.executable, "-c", _CHILD, dir, run_id],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
