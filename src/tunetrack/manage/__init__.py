"""Managing runs after the fact: rename, tag, note, stop and delete them (``runs``), and copy them between
stores (``sync``). The one part of tunetrack besides the writer that writes into a store: an edit is a
record of its own, never a change to a file, so it is safe while the run is still being written."""

from .runs import delete_runs, note_run, rename_run, stop_run, tag_run

__all__ = ["delete_runs", "note_run", "rename_run", "stop_run", "tag_run"]
