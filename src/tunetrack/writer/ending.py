"""What a writing process learns about itself as it writes, for its end record (``store.ends``): each
key's last value and aggregates, its last step, the config it logged, and whether it rewound. Readers
take a finished run's listing from the end record instead of reading its data.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

from .. import aggregates
from ..config import merge
from ..store import codec
from ..store.ends import EndRecord, LastValues
from ..values import DROP, to_plain
from .counters import Counters

#: keys per row from which a block's aggregates are folded with NumPy even where nothing else loaded it
WIDE_ROWS = 32


class EndAccumulator:
    """Folds each written block, config record and event into what the end record will say."""

    def __init__(self) -> None:
        #: each key's last value (``codec.encode_rows`` keeps it up to date as it encodes a block)
        self.last_values: dict[str, Any] = {}
        self.last_step: int | None = None
        self._config: dict[str, Any] = {}  # the config records this process wrote, merged
        #: each key's aggregates over what this process wrote; a rewind makes them a superset of the
        #: visible points, so it is recorded beside them and readers then read the data
        self._aggregates: dict[str, aggregates.Agg] = {}
        self._matrix_folds: dict[tuple[str, ...], aggregates.MatrixFold] = {}
        self._rewound = False

    def rows(self, record: dict[str, Any], rows: codec.Rows, keys: list[str] | None = None) -> None:
        """Fold a written block into each key's aggregates. The matrix of a block whose rows share
        their float keys is folded with NumPy, one fold per key list merged at the end, when NumPy is
        already loaded (every training process has it) or the rows are wide (``WIDE_ROWS`` keys: a
        Python loop per key would cost the training thread's share of the interpreter more than
        loading NumPy once); narrow rows in a process without NumPy are folded key by key, and the
        writer does not load it for them. ``keys``: the matrix's (``codec.matrix_keys``: a block may
        refer to them)."""
        self.last_step = rows.steps[-1]
        keys = keys if keys is not None else record.get(codec.MATRIX_KEYS)
        columns = codec.plain_columns(record)
        if keys and ("numpy" in sys.modules or len(keys) >= WIDE_ROWS):
            matrix = self._matrix_folds.get(tuple(keys))
            if matrix is None:
                matrix = self._matrix_folds[tuple(keys)] = aggregates.MatrixFold(keys)
            matrix.add(rows.steps, rows.times, record[codec.MATRIX])
        elif keys:
            columns = itertools.chain(codec.matrix_columns(record, keys), columns)
        aggs = self._aggregates
        for key, steps, times, values in columns:
            new = aggregates.chunk(steps, times, values)
            if new is not None:
                aggs[key] = aggregates.merge(aggs.get(key), new)

    def config(self, config: dict[str, Any]) -> None:
        self._config = merge(self._config, config)

    def event(self, kind: str) -> None:
        self._rewound = self._rewound or kind == "rewind"

    def record(self, end: EndRecord, counters: Counters, backends: dict[str, dict[str, Any]]) -> EndRecord:
        """The end record: how the process ended (``end``), and everything folded so far."""
        values = {k: v for k, v in ((k, to_plain(v)) for k, v in self.last_values.items()) if v is not DROP}
        out = EndRecord(
            **end,
            counters=counters.as_dict(),
            last=LastValues(step=self.last_step, values=values),
            aggregates=self._all_aggregates(),
            config=self._config,  # what this process logged, merged: readers need not read its records
        )
        if backends:
            out["backends"] = backends
        if self._rewound:
            out["rewound"] = True
        return out

    def _all_aggregates(self) -> dict[str, aggregates.Agg]:
        """Each key's aggregates over everything this process wrote."""
        out = dict(self._aggregates)
        for matrix in self._matrix_folds.values():
            for key, agg in matrix.aggregates().items():
                out[key] = aggregates.merge(out.get(key), agg)
        return out
