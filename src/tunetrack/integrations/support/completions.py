"""Generations a trainer writes to disk, picked up as tables of samples.

TRL's GRPO and RLOO trainers (``log_completions=True``) write ``completions/completions_<step>.parquet``
after the ``on_log`` of that step (every column: step, prompt, completion, one per reward function, the
``log_extra`` columns, advantage) and send the table only to wandb and trackio; ``CompletionFiles``
reads each new file once and hands the DataFrame to ``Tracker.log_table`` as it is (the writer thread
types it: rewards stay numbers, conversational prompts become chat messages). ms-swift's GRPO trainer appends
the same table to one file instead, ``completions.jsonl``, a line per logging step holding a column
per field (``{"step": ["3", ...], "prompt": [...], "completion": [...], <reward>: [...]}``), also after
that step's ``on_log``; ``CompletionLog`` reads the lines added since its last call.

Neither table holds the total reward the trainer optimizes (its ``reward`` metric), only one column per
reward function: ``Rewards`` adds it, as a ``reward`` column beside them, weighted as the trainer
weighs them (``reward_weights``; a function's missing value counts as nothing, as TRL's ``nansum``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...values import is_finite_number

if TYPE_CHECKING:
    from ...tracker import Tracker

KEY = "completions"
#: the column the total reward is added as, the name the trainers' own metric has
TOTAL = "reward"
#: the metric GRPO trainers (TRL, ms-swift) log per reward function, in the order they weigh them
_PER_FUNCTION = re.compile(r"rewards/(.+)/mean")


class Rewards:
    """A GRPO trainer's reward functions, in order (learned from the ``rewards/<name>/mean`` metrics
    it logs before it writes the table of that step), and their weights (``args.reward_weights``, 1
    each when unset): what the total reward of a row is."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def learn(self, logs: Mapping[str, Any]) -> None:
        for key in logs:
            if (m := _PER_FUNCTION.fullmatch(key)) and m.group(1) not in self.names:
                self.names.append(m.group(1))

    def weights(self, args: Any) -> list[float]:
        given = getattr(args, "reward_weights", None)
        if isinstance(given, Sequence) and len(given) == len(self.names):
            return [float(w) for w in given]
        return [1.0] * len(self.names)

    def total(self, row: Mapping[str, Any], weights: Sequence[float]) -> float:
        values = [row.get(n) for n in self.names]
        return math.fsum(w * float(v) for w, v in zip(weights, values) if is_finite_number(v))

    def where(self, columns: Sequence[str]) -> int | None:
        """Where the total goes among ``columns``: after the last reward function's; None when the
        table already has one, or does not hold every function the trainer logged."""
        if not self.names or TOTAL in columns or not set(self.names) <= set(columns):
            return None
        return max(list(columns).index(n) for n in self.names) + 1


class CompletionFiles:
    """The completion tables of one output folder, each recorded once."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def collect(self, folder: Path, tracker: Tracker | None, rewards: Rewards, args: Any) -> None:
        """Record every table in ``folder`` not recorded yet (one still being written waits), each
        with its total reward (``rewards``, weighted as ``args`` says)."""
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
            at = rewards.where(list(frame.columns))
            if at is not None:
                weights = rewards.weights(args)
                totals = [rewards.total(row, weights) for row in frame.to_dict("records")]
                frame.insert(at, TOTAL, totals)
            tracker.log_table(KEY, frame, step=step)


class CompletionLog:
    """One JSON Lines file of column tables, read from where the last call stopped. A line not yet
    ended by a newline is still being written and waits for the next call; a line that is not a table
    is skipped."""

    def __init__(self) -> None:
        self.offset = 0

    def collect(self, path: Path, tracker: Tracker | None, rewards: Rewards, args: Any) -> None:
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
            at = rewards.where(list(columns))
            if at is not None:
                weights = rewards.weights(args)
                rows = [_inserted(row, at, rewards.total(row, weights)) for row in rows]
            if rows:
                tracker.log_table(KEY, rows, step=step)


def _inserted(row: dict[str, Any], at: int, total: float) -> dict[str, Any]:
    items = list(row.items())
    return dict([*items[:at], (TOTAL, total), *items[at:]])
