"""Generations a trainer writes to disk, picked up as text samples.

TRL's GRPO trainer (``log_completions=True``) writes ``completions/completions_<step>.parquet`` after
the ``on_log`` of that step and sends the table only to wandb and trackio; ``CompletionFiles`` reads
each new file once and records its rows with ``Tracker.log_text``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

KEY = "completions"


class CompletionFiles:
    """The completion tables of one output folder, each recorded once."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def collect(self, folder: Path, tracker: Any) -> None:
        """Record every table in ``folder`` not recorded yet (one still being written waits)."""
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
            rows = [
                {
                    k: (v if isinstance(v, (int, float, str, bool)) or v is None else str(v))
                    for k, v in r.items()
                }
                for r in frame.to_dict("records")
            ]
            tracker.log_text(KEY, rows, step=step)
