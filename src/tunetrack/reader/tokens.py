"""Values per token: a completion's tokens (a column of strings) and the numbers logged beside them,
one per token (log-probability, entropy, advantage), aligned by position. What a view colours a
completion's text by: where the model was unsure, where the advantage went. And what a page that holds
its table of samples whole (the report, the notebook panel) draws of a row besides its cells' text:
its tokens so coloured, and each conversation (an agent's trajectory) as turns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..values import is_chat, is_number
from .samples import clip

#: the messages of a conversation a bounded page keeps: the first and the last half of these
CHAT_MESSAGES = 32


@dataclass
class Tokens:
    """A row's tokens and the values logged per token beside them (``{"logprob": [...], ...}``), each
    as long as ``tokens``: what a view colours a completion's text by."""

    column: str
    tokens: list[str]
    values: dict[str, list[float]]


def tokens_of(row: dict[str, Any]) -> Tokens | None:
    """The row's tokens (a column of strings, the first whose name says ``token``, else the first) and
    every column of numbers as long as them; None when the row has no tokens with a value per token."""
    lists = {k: v for k, v in row.items() if isinstance(v, list) and v}
    words = [k for k, v in lists.items() if all(isinstance(x, str) for x in v)]
    if not words:
        return None
    column = next((k for k in words if "token" in k.lower()), words[0])
    tokens = lists[column]
    values = {
        k: [float(x) for x in v]
        for k, v in lists.items()
        if len(v) == len(tokens) and all(is_number(x) for x in v)
    }
    return Tokens(column, tokens, values) if values else None


def rich_cells(row: dict[str, Any], columns: Sequence[str], chars: int) -> dict[str, Any]:
    """What a bounded page draws of ``row`` beyond its cells' text, each as JSON holds it: ``tokens``
    (``tokens_of``: the first tokens up to ``chars`` characters, ``total`` saying how many there were,
    values to six significant digits, NaN and ±Inf as null) and ``chats`` (``{index of the column in
    columns: messages}``, every string cut by ``clip``, a long conversation's middle messages left out
    and said so); neither key where the row has none."""
    out: dict[str, Any] = {}
    found = tokens_of(row)
    if found is not None and found.column in columns:
        kept, used = 0, 0
        while kept < len(found.tokens) and used + len(found.tokens[kept]) <= chars:
            used += len(found.tokens[kept])
            kept += 1
        out["tokens"] = {
            "column": found.column,
            "index": list(columns).index(found.column),
            "total": len(found.tokens),
            "tokens": found.tokens[: max(kept, 1)],
            "values": {k: [_short(x) for x in v[: max(kept, 1)]] for k, v in found.values.items()},
        }
    chats = {str(i): _chat(row[c], chars) for i, c in enumerate(columns) if is_chat(row.get(c))}
    if chats:
        out["chats"] = chats
    return out


def _chat(messages: list[Any], chars: int) -> list[Any]:
    """A conversation bounded: its strings cut, at most ``CHAT_MESSAGES`` messages (the first and the
    last half of them, a message between saying how many were left out)."""
    if len(messages) > CHAT_MESSAGES:
        half = CHAT_MESSAGES // 2
        gap = {"role": "…", "content": f"{len(messages) - 2 * half:,} more messages left out of this page"}
        messages = [*messages[:half], gap, *messages[-half:]]
    return [_bounded(m, chars) for m in messages]


def _bounded(value: Any, chars: int) -> Any:
    """``value`` with every string cut by ``clip`` and every non-finite float as None (JSON has none)."""
    if isinstance(value, str):
        return clip(value, chars)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _bounded(v, chars) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bounded(v, chars) for v in value]
    return value


def _short(value: float) -> float | None:
    """A value per token as a page shows it: six significant digits (its colour needs far fewer)."""
    return float(f"{value:.6g}") if math.isfinite(value) else None
