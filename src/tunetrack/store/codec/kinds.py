"""The record format's shared vocabulary: its version, the record kinds (the ``k`` field of every
payload), the fields several kinds share, and the column kinds of rows and tables. Each kind's own
fields are in its module (``rows``, ``config``, ``event``, ``console``, ``table``)."""

from __future__ import annotations

#: The version of this format, recorded in every run's ``run.json``.
FORMAT_VERSION = 1

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
