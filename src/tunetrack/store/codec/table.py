"""``TABLE`` (``"s"``), one table of samples (generations, GRPO completions) at a step: ``key``,
``step``, ``t``, ``n`` (its rows), ``cols`` (``[[name, column kind], ...]``), ``z0`` and ``zn`` (the ids
of the long strings it defines), ``z`` (whether the body is zlib-compressed) and ``b``, the body: a
msgpack map of ``v`` (one list or byte string per column) and ``d`` (the strings it defines, ids
``z0`` to ``z0 + zn - 1``). A string of ``SHARED_TEXT`` characters or more is stored once per process:
where it first appears it is defined with the next id, afterwards a cell holds that id (the same
prompt at every step costs a few bytes after the first). Column kinds: ``"f"``, ``"i"``, ``"b"`` as in
rows; ``"t"`` text (each cell a string, a string id or None); ``"m"`` chat messages (each cell None or
a list of ``[role, content]`` or ``[role, content, extra]``, the content a string, a string id, or any
plain value); ``"p"`` an image (the path of its PNG inside the run, or None); ``"o"`` anything else
plain (numbers with None, mixed values). A table is a record of its own, not an event, so a reader
indexes the keys and steps of thousands of tables without decompressing them, and readers that do not
know the kind (tunetrack before tables) skip it.

The writer's side of the shared strings is ``SharedStrings``, the reader's ``StringIndex``.
"""

from __future__ import annotations

import hashlib
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack

from .kinds import BOOL, COUNT, FLOAT, INT, KIND, TABLE, TIMES

# -- fields of a table record (and ``k``, ``n``, ``t``) --
TABLE_KEY = "key"
TABLE_STEP = "step"
TABLE_COLUMNS = "cols"
FIRST_STRING = "z0"
STRING_COUNT = "zn"
ZIPPED = "z"
BODY = "b"
BODY_VALUES = "v"
BODY_STRINGS = "d"

# -- table column kinds besides FLOAT, INT, BOOL and OBJECT --
TEXT = "t"
CHAT = "m"
IMAGE = "p"
#: a list of numbers or of strings per cell, stored as it is: a completion's tokens and a value per
#: token (log-probability, entropy, advantage), aligned by position
SEQUENCE = "q"

#: strings this long or longer are stored once per process and then referred to by id
SHARED_TEXT = 64
#: how many long strings the writer remembers (by a 16-byte digest, not their text): a prompt repeated
#: at every step stays known; a string seen again after this many others is stored again
SHARED_MEMORY = 65_536
#: a table body smaller than this is stored as it is; larger ones are compressed when that saves 10%
COMPRESS_FROM = 1024
#: what a cell shows when the record defining its string was lost (a corrupt record was skipped)
MISSING_TEXT = "[text lost: the record holding it is damaged]"


# == encoding ===================================================================================
class SharedStrings:
    """The writer's side of the strings stored once per process: which long strings this process has
    stored, by digest, and the next id. Ids only grow; a string forgotten (``SHARED_MEMORY``) and seen
    again is simply defined again under a new id."""

    __slots__ = ("_ids", "limit", "next_id")

    def __init__(self, limit: int = SHARED_MEMORY) -> None:
        self._ids: OrderedDict[bytes, int] = OrderedDict()
        self.limit = limit
        self.next_id = 0

    def ref(self, text: str, new: list[str]) -> str | int:
        """``text`` as a cell holds it: short strings as they are, a long one as its id (appended to
        ``new`` when this is its first appearance)."""
        if len(text) < SHARED_TEXT:
            return text
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        known = self._ids.get(digest)
        if known is not None:
            self._ids.move_to_end(digest)
            return known
        new.append(text)
        self._ids[digest] = ref = self.next_id
        self.next_id += 1
        if len(self._ids) > self.limit:
            self._ids.popitem(last=False)
        return ref


def encode_table(
    key: str,
    step: int,
    unix_time: float,
    columns: Sequence[tuple[str, str, list[Any]]],
    shared: SharedStrings,
) -> dict[str, Any]:
    """A ``TABLE`` record of typed columns ``(name, column kind, values)``, as the writer converted them
    (plain values only: numbers, bools, strings, None, for chat columns lists of message dicts, and
    for sequence columns lists of numbers or of strings)."""
    first = shared.next_id
    new: list[str] = []
    data: list[Any] = []
    for _, kind, values in columns:
        if kind == FLOAT:
            data.append(array("d", values).tobytes())
        elif kind == INT:
            data.append(array("q", values).tobytes())
        elif kind == BOOL:
            data.append(bytes(values))
        elif kind == TEXT:
            data.append([shared.ref(v, new) if type(v) is str else v for v in values])
        elif kind == CHAT:
            data.append([None if v is None else [_message(m, shared, new) for m in v] for v in values])
        else:
            data.append(list(values))
    body = msgpack.packb({BODY_VALUES: data, BODY_STRINGS: new}, use_bin_type=True)
    zipped = False
    if len(body) >= COMPRESS_FROM:
        compressed = zlib.compress(body, 6)
        if len(compressed) < 0.9 * len(body):
            body, zipped = compressed, True
    return {
        KIND: TABLE,
        TABLE_KEY: key,
        TABLE_STEP: step,
        TIMES: unix_time,
        COUNT: len(columns[0][2]) if columns else 0,
        TABLE_COLUMNS: [[name, kind] for name, kind, _ in columns],
        FIRST_STRING: first,
        STRING_COUNT: len(new),
        ZIPPED: zipped,
        BODY: body,
    }


def _message(message: dict[str, Any], shared: SharedStrings, new: list[str]) -> list[Any]:
    content = message.get("content")
    out = [message.get("role"), shared.ref(content, new) if type(content) is str else content]
    extra = {k: v for k, v in message.items() if k not in ("role", "content")}
    return [*out, extra] if extra else out


# == decoding ===================================================================================
class StringIndex:
    """The reader's side of the strings stored once per process: which table record defines each id.
    A record's body is decompressed only when one of its rows, or one of its strings, is asked for."""

    def __init__(self) -> None:
        self._firsts: list[int] = []
        self._records: list[TableRecord] = []

    def add(self, record: TableRecord) -> None:
        record.strings = self
        if record.defined:
            self._firsts.append(record.first)
            self._records.append(record)

    def get(self, ref: int) -> str:
        import bisect

        i = bisect.bisect_right(self._firsts, ref) - 1
        if i >= 0:
            record = self._records[i]
            defined = record.body()[1]
            if ref - record.first < len(defined):
                return str(defined[ref - record.first])
        return MISSING_TEXT


@dataclass(eq=False)
class TableRecord:
    """A table of samples, its body still encoded: the key, step and columns are read at once (an
    index of thousands of tables costs no decompression), the rows when asked for (``rows()``)."""

    key: str
    step: int
    time: float
    count: int
    columns: list[tuple[str, str]]
    first: int
    defined: int
    zipped: bool
    raw: bytes
    strings: StringIndex | None = None
    _body: tuple[list[Any], list[str]] | None = field(default=None, repr=False)

    def body(self) -> tuple[list[Any], list[str]]:
        """(the columns' data, the strings this record defines), decoded once."""
        if self._body is None:
            data = zlib.decompress(self.raw) if self.zipped else self.raw
            body = msgpack.unpackb(data, raw=False, strict_map_key=False)
            self._body = (body.get(BODY_VALUES) or [], body.get(BODY_STRINGS) or [])
        return self._body

    def rows(self) -> list[dict[str, Any]]:
        """The table's rows, as dicts of plain values (a string id resolved to its text, chat messages as
        ``{"role", "content"}`` dicts, an image as its path inside the run)."""
        data = self.body()[0]
        rows: list[dict[str, Any]] = [{} for _ in range(self.count)]
        for (name, kind), values in zip(self.columns, data):
            for row, value in zip(rows, self._cells(kind, values)):
                row[name] = value
        return rows

    def _cells(self, kind: str, values: Any) -> list[Any]:
        if kind == FLOAT:
            return array("d", values).tolist()
        if kind == INT:
            return array("q", values).tolist()
        if kind == BOOL:
            return [bool(v) for v in values]
        if kind == TEXT:
            return [self._text(v) for v in values]
        if kind == CHAT:
            return [None if v is None else [self._chat_message(m) for m in v] for v in values]
        return list(values)

    def _text(self, value: Any) -> Any:
        if type(value) is int:
            return self.strings.get(value) if self.strings is not None else MISSING_TEXT
        return value

    def _chat_message(self, message: list[Any]) -> dict[str, Any]:
        out = {"role": message[0], "content": self._text(message[1]) if len(message) > 1 else None}
        if len(message) > 2 and isinstance(message[2], dict):
            out.update(message[2])
        return out


def decode(rec: dict[str, Any]) -> TableRecord:
    """The ``TableRecord`` of an unpacked table record, its body still encoded."""
    return TableRecord(
        str(rec[TABLE_KEY]),
        int(rec[TABLE_STEP]),
        float(rec[TIMES]),
        int(rec[COUNT]),
        [(str(name), str(col_kind)) for name, col_kind in rec[TABLE_COLUMNS]],
        int(rec[FIRST_STRING]),
        int(rec[STRING_COUNT]),
        bool(rec[ZIPPED]),
        rec[BODY],
    )
