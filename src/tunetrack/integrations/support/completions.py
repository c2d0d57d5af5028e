"""Generations a trainer writes to disk, picked up as tables of samples.

TRL's GRPO and RLOO trainers (``log_completions=True``) write ``completions/completions_<step>.parquet``
after the ``on_log`` of that step (every column: step, prompt, completion, one per reward function, the
``log_extra`` columns, advantage) and send the table only to wandb and trackio; ``CompletionFiles``
reads each new file once and hands the DataFrame to ``Tracker.log_table`` as it is (the writer thread
types it: rewards stay numbers, conversational prompts become chat messages). ms-swift's GRPO trainer appends
the same table to one file instead, ``completions.jsonl``, a line per logging step holding a column
per field (``{"step": ["3", ...], "prompt": [...], "completion": [...], <reward>: [...]}``), also after
that step's ``on_log``; ``CompletionLog`` reads the lines added since its last call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...tracker import Tracker

KEY = "completions"


class CompletionFiles:
    """The completion tables of one output folder, each recorded once."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def collect(self, folder: Path, tracker: Tracker | None) -> None:
        """Record every table in ``folder`` not recorded yet (one still being written waits)."""
        if tracker is None:
            return
        try:
            files = sorted(p for p in folder.glob("completions_*.parquet") if p.name not in self.seen)
        except OSError:
            return
        for path in files:
            try:
                import pandas as pd

                frame = pd.read_parquet(path)
            except Exception:
                continue  # still being written: the next step picks it up
            self.seen.add(path.name)
            step = (
                int(frame["step"].iloc[0])
                if "step" in frame and len(frame)
                else int(path.stem.split("_")[-1])
            )
            tracker.log_table(KEY, frame, step=step)


class CompletionLog:
    """One JSON Lines file of column tables, read from where the last call stopped. A line not yet
    ended by a newline is still being written and waits for the next call; a line that is not a table
    is skipped."""

    def __init__(self) -> None:
        self.offset = 0

    def collect(self, path: Path, tracker: Tracker | None) -> None:
        if tracker is None:
            return
        try:
            with open(path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            try:
                table = json.loads(line)
                columns = {k: list(v) for k, v in table.items() if isinstance(v, list)}
                rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
                step = int(rows[0]["step"]) if rows and "step" in rows[0] else None
            except (ValueError, TypeError, AttributeError):
                continue
            if rows:
                tracker.log_table(KEY, rows, step=step)
