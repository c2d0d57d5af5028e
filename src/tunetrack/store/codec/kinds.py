"""The record format's shared vocabulary: its version, the record kinds (the ``k`` field of every
payload), the fields several kinds share, and the column kinds of rows and tables. Each kind's own
fields are in its module (``rows``, ``config``, ``event``, ``console``, ``table``)."""

from __future__ import annotations

#: The version of this format, recorded in every run's ``run.json`` as ``format``. A reader reads what
#: it can of a run of a newer version and says once that the run needs a newer tunetrack: a newer
#: format may store what this one cannot read (version 1 readers skipped silently what they did not
#: know, so a version 2 run read by one shows no wide metrics). A writer re-attaching to a run (a
#: resume, another node of a job) writes the run's version, or its own if older: every process of a
#: run is then readable by whatever reads the run's version.
FORMAT_VERSION = 2
#: the first version whose rows blocks may name their keys by a list's id (``keys``); version 1 blocks
#: name them in every block
KEYS_FORMAT = 2

# -- record kinds (the ``k`` field) --
ROWS = "r"
SYSTEM = "y"
CONFIG = "c"
EVENT = "e"
CONSOLE = "l"
TABLE = "s"

# -- fields several kinds share --
KIND = "k"
COUNT = "n"
TIMES = "t"

# -- column kinds (of rows blocks and tables) --
FLOAT = "f"
INT = "i"
BOOL = "b"
OBJECT = "o"
