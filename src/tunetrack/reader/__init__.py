"""Read runs back: ``list_runs`` and ``open_run`` return ``Run`` objects (metadata, state, config,
summary, events, metric series). Used by the CLI, the dashboard and users' notebooks; ``Catalog``
keeps a store's runs for a long-lived reader, ``run_json`` gives a run's JSON shape, ``run_text`` its
wording as people read it (``as_text``: the CLI's ``show``, the dashboard and the report), ``m4`` thins a
series for drawing. Nothing here writes a run (``tunetrack.manage`` edits, deletes and copies runs).
What a listing read from run folders is handed back to the store (``Store.keep_listed`` from
``find.all_runs``: a folder store takes the ended runs into its index), and the dashboard's rows too
(``Store.keep`` from ``Catalog``: a folder's ``.rows.msgpack``, which nothing but readers reads and
any reader rebuilds); a bucket's index lists runs without them."""

from ..states import STATES
from .as_json import provenance, run_json
from .as_text import differing, run_text
from .catalog import Catalog
from .downsample import chart_points, m4, thin
from .find import list_runs, no_project, open_run, run_exists, store_name
from .run import Run
from .series import Series, numeric_values, present

__all__ = [
    "STATES",
    "Catalog",
    "Run",
    "Series",
    "chart_points",
    "differing",
    "list_runs",
    "no_project",
    "m4",
    "numeric_values",
    "open_run",
    "present",
    "provenance",
    "run_exists",
    "run_json",
    "run_text",
    "store_name",
    "thin",
]
