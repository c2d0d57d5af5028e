"""Values per token: a completion's tokens (a column of strings) and the numbers logged beside them,
one per token (log-probability, entropy, advantage), aligned by position. What a view colours a
completion's text by: where the model was unsure, where the advantage went."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..values import is_number


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
