"""Read runs back: ``list_runs`` and ``open_run`` return ``Run`` objects (metadata, state, config,
summary, events, metric series). Used by the CLI, the dashboard and users' notebooks; ``Catalog``
keeps a store's runs for a long-lived reader, ``run_json`` gives a run's JSON shape, ``run_text`` its
wording as people read it (``as_text``: the CLI's ``show``, the dashboard and the report), ``m4`` thins a
series for drawing. ``rename_run``, ``tag_run``, ``note_run`` and ``delete_runs`` manage runs after
the fact (the one thing here that writes: edits are records of their own, never a change to a file)."""

from ..states import STATES
from .as_json import provenance, run_json
from .as_text import differing, run_text
from .catalog import Catalog
from .downsample import chart_points, m4, thin
from .find import list_runs, open_run, store_at
from .manage import delete_runs, note_run, rename_run, tag_run
from .run import Run
from .series import Series, numeric_values, present

__all__ = [
    "STATES",
    "Catalog",
    "Run",
    "Series",
    "chart_points",
    "delete_runs",
    "differing",
    "list_runs",
    "m4",
    "note_run",
    "numeric_values",
    "open_run",
    "present",
    "provenance",
    "rename_run",
    "run_json",
    "run_text",
    "store_at",
    "tag_run",
    "thin",
]
