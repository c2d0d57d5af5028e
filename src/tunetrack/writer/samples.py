"""Tables of samples (``Tracker.log_table``), converted on the writer thread: the caller handed over
its list of dicts or its DataFrame as it was, so everything that costs (reading a DataFrame, typing
each column, bounding long text, encoding images) is paid here, never by training.

Every input is stored: rows with different columns get the union of the columns (a missing cell is
None), objects that are neither text, numbers, chat messages nor images are stored as their text, a
string longer than ``MAX_TEXT`` is cut with a marker saying how long it was, an image that cannot be
encoded becomes None. Each such oddity is warned about once per key and kind, and nothing raises.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..store.codec import BOOL, CHAT, FLOAT, IMAGE, INT, OBJECT, SEQUENCE, TEXT
from ..values import DROP, is_chat, to_plain
from .images import safe_name

#: the longest text a cell keeps (characters); longer text is cut, with ``TRUNCATED`` appended
MAX_TEXT = 1_000_000
TRUNCATED = " … [truncated: {total:,} characters in all]"
_SURROGATE = re.compile("[\ud800-\udfff]")
#: what a cell of no kind at all holds
_NONE = "none"
#: ints that a float column holds exactly
_EXACT = 2**53


@dataclass
class Converted:
    """A table as the codec stores it, and what the writer still has to do for it."""

    #: ``(name, column kind, values)``, the values plain
    columns: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    #: ``(path inside the run, the image object)`` to encode as PNG
    images: list[tuple[str, Any]] = field(default_factory=list)
    #: what was odd about the input, worded for a warning: one per kind of oddity
    problems: dict[str, str] = field(default_factory=dict)

    def forget(self, paths: set[str]) -> None:
        """Empty the image cells of ``paths`` (images that could not be encoded)."""
        for _, kind, values in self.columns:
            if kind == IMAGE:
                values[:] = [None if v in paths else v for v in values]

    def rows(self) -> list[dict[str, Any]]:
        """The rows as plain dicts (what backends are given as a text event)."""
        count = len(self.columns[0][2]) if self.columns else 0
        rows: list[dict[str, Any]] = [{} for _ in range(count)]
        for name, _, values in self.columns:
            for row, value in zip(rows, values):
                row[name] = value
        return rows


def convert(key: str, step: int, stamp: float, table: Any) -> Converted:
    """``table`` (a list of dicts, a DataFrame, one dict, one string, a list of strings) as typed
    columns. ``stamp`` (the time the table was logged) keeps the paths of its images apart from those
    of another table at the same key and step."""
    out = Converted()
    names, columns = _columns(table, out)
    prefix = f"media/samples/{safe_name(key)}/{step}_{int(stamp * 1e6)}"
    for index, (name, values) in enumerate(zip(names, columns)):
        kind, cells = _typed(values, out)
        if kind == IMAGE:
            paths: list[Any] = []
            for row, (cell_kind, value) in enumerate(cells):
                if cell_kind == IMAGE:
                    path = f"{prefix}_{index}_{row}.png"
                    out.images.append((path, value))
                    paths.append(path)
                else:
                    paths.append(None)
            out.columns.append((name, IMAGE, paths))
        else:
            out.columns.append((name, kind, [_as(kind, cell_kind, value, out) for cell_kind, value in cells]))
    return out


def _columns(table: Any, out: Converted) -> tuple[list[str], list[list[Any]]]:
    """Column names and each column's raw values."""
    if _is_frame(table):
        names = [str(c) for c in table.columns]
        return names, [table.iloc[:, i].tolist() for i in range(len(names))]
    if isinstance(table, str):
        rows: list[Any] = [{"text": table}]
    elif isinstance(table, Mapping):
        rows = [table]
    elif isinstance(table, Iterable):
        rows = list(table)
    else:
        rows = [{"text": table}]
    dicts = [row if isinstance(row, Mapping) else {"text": row} for row in rows]
    seen: dict[Any, None] = {}
    for row in dicts:
        seen.update(dict.fromkeys(row))
    if any(len(row) != len(seen) for row in dicts):
        out.problems["columns"] = "rows with different columns: a cell a row does not have is None"
    names = list(seen)
    return [str(n) for n in names], [[row.get(name) for row in dicts] for name in names]


def _is_frame(table: Any) -> bool:
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(table, pandas.DataFrame)


def _typed(values: list[Any], out: Converted) -> tuple[str, list[tuple[str, Any]]]:
    """The column's kind and each cell as ``(its own kind, its value)``."""
    cells = [_cell(v, out) for v in values]
    kinds = {kind for kind, _ in cells} - {_NONE}
    if FLOAT in kinds and kinds - {FLOAT, INT, BOOL}:  # NaN beside text: pandas' missing value
        cells = [(_NONE, None) if k == FLOAT and v != v else (k, v) for k, v in cells]
        kinds = {kind for kind, _ in cells} - {_NONE}
    has_none = len(kinds) < len({kind for kind, _ in cells})
    if not kinds:
        return TEXT, cells
    if len(kinds) == 1:
        (kind,) = kinds
        if kind in (TEXT, CHAT, IMAGE, SEQUENCE) or not has_none:
            return kind, cells
    elif kinds == {INT, FLOAT} and not has_none and all(abs(v) <= _EXACT for k, v in cells if k == INT):
        return FLOAT, cells
    return OBJECT, cells


def _cell(value: Any, out: Converted) -> tuple[str, Any]:
    kind = type(value)
    if value is None or kind.__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return _NONE, None
    if kind is str:
        return TEXT, value
    if kind is bool:
        return BOOL, value
    if kind is int:
        return (INT, value) if -(2**63) <= value < 2**63 else (FLOAT, float(value))
    if kind is float:
        return FLOAT, value
    if _is_image(value):
        return IMAGE, value
    if _is_scalar(value):
        plain = to_plain(value)
        if plain is not DROP:
            return _cell(plain, out)
    if isinstance(value, (list, tuple)) or _is_array(value):
        items = value.tolist() if _is_array(value) else list(value)
        if is_chat(items):
            return CHAT, [_message(m) for m in items]
        if items and all(type(v) in (int, float) for v in items):
            return SEQUENCE, [float(v) for v in items]  # a value per token, say
        if items and all(type(v) is str for v in items):
            return SEQUENCE, items  # tokens
        return TEXT, _json(items)
    if isinstance(value, Mapping):
        return TEXT, _json(value)
    out.problems["objects"] = "values that are not text, numbers, chat messages or images: stored as text"
    return TEXT, str(value)


def _as(kind: str, cell_kind: str, value: Any, out: Converted) -> Any:
    """A cell's value as a column of ``kind`` stores it."""
    if value is None:
        return None
    if kind == FLOAT:
        return float(value)
    if kind in (TEXT, OBJECT) and cell_kind == TEXT:
        return _bounded(value, out)
    if kind == CHAT:
        return [
            {**m, "content": _bounded(m["content"], out)} if type(m["content"]) is str else m for m in value
        ]
    if kind == OBJECT and cell_kind in (CHAT, SEQUENCE):
        return _bounded(_json(value), out)
    if kind == OBJECT and cell_kind == IMAGE:
        out.problems["images"] = "images beside other values in one column: stored as their description"
        return _bounded(f"<image {type(value).__name__}>", out)
    return value


def _bounded(text: str, out: Converted) -> str:
    """``text`` cut at ``MAX_TEXT`` characters (with a marker), and encodable as UTF-8 (a lone
    surrogate, from bytes decoded with ``surrogateescape``, becomes a replacement character)."""
    if len(text) > MAX_TEXT:
        out.problems["long"] = f"text longer than {MAX_TEXT:,} characters: cut, with a marker"
        text = text[:MAX_TEXT] + TRUNCATED.format(total=len(text))
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            text = _SURROGATE.sub("\ufffd", text)
    return text


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message as plain values: ``role`` and ``content`` (text, or a multimodal list kept as
    plain data), and any other fields (``tool_calls``, ...) as plain data."""
    out = {str(k): _plain(v) for k, v in message.items()}
    out["role"] = str(message.get("role"))
    return out


def _plain(value: Any) -> Any:
    """Any value as JSON-safe data (what msgpack holds), for the insides of chat messages."""
    return json.loads(_json(value))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_default)


def _default(value: Any) -> Any:
    if getattr(value, "ndim", 0) and hasattr(value, "tolist"):  # an array or tensor of any shape
        return value.tolist()
    plain = to_plain(value)
    return str(value) if plain is DROP else plain


def _is_scalar(value: Any) -> bool:
    """A NumPy scalar, or a 0-dimensional array or tensor (``rewards[i]``). A 1-D one of one element
    is a sequence like any other (one token's values, where its neighbours hold eight): read as a
    number it would make the column's kinds differ and the whole column text."""
    return hasattr(value, "item") and getattr(value, "ndim", None) == 0


def _is_array(value: Any) -> bool:
    """A 1-D NumPy array or tensor: a sequence (token ids, a value per token)."""
    module = type(value).__module__
    return (module.startswith("numpy") or module.startswith("torch")) and getattr(value, "ndim", None) == 1


def _is_image(value: Any) -> bool:
    """A PIL image, or an array or tensor of pixels (2-D, or 3-D with 1, 3 or 4 channels first or
    last); a 1-D array is data (token ids), not an image."""
    module = type(value).__module__
    if module.startswith("PIL."):
        return True
    shape = getattr(value, "shape", None)
    if shape is None or not (module.startswith("numpy") or module.startswith("torch")):
        return False
    dtype = str(getattr(value, "dtype", ""))
    if not any(t in dtype for t in ("int", "float", "bool")):
        return False
    dims = tuple(shape)
    if len(dims) == 2:
        return min(dims) > 1
    return len(dims) == 3 and (dims[0] in (1, 3, 4) or dims[-1] in (1, 3, 4))
