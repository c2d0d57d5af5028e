"""The seed documents' "CustomTracker" as a tunetrack backend: it appends what a run records to a JSON
Lines file (``$MYCOMPANY_TRACKER_FILE``, default ``./mycompany-tracker.jsonl``), standing in for a
company's own tracking service.

tunetrack calls it on a thread of its own, never on the training thread; it needs no import from
tunetrack (``Backend`` is a Protocol) and takes its settings from its own environment variables, as a
backend built by name gets no arguments.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any


class MyCompanyBackend:
    name = "mycompany"

    def __init__(self, path: str | None = None) -> None:
        self.path = path or os.environ.get("MYCOMPANY_TRACKER_FILE", "mycompany-tracker.jsonl")
        self._file: Any = None

    def _send(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()

    def start(self, run: Any) -> None:
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open for the run
        self._send({"type": "start", "run": run.id, "name": run.name, "project": run.project})

    def log_config(self, config: dict[str, Any]) -> None:
        self._send({"type": "config", "config": config})

    def log(self, rows: Sequence[tuple[int, float, dict[str, Any]]]) -> None:
        for step, when, values in rows:
            self._send({"type": "metrics", "step": step, "time": when, "values": values})

    def finish(self, state: str) -> None:
        self._send({"type": "finish", "state": state})
        self._file.close()
