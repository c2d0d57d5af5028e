"""The record format: what the payload of every record in a run's data files holds. Records are
encoded and decoded here and nowhere else (``framing.py`` wraps each payload in its checksummed
envelope).

A payload is a msgpack map whose ``k`` field names its kind (``kinds``); each kind is laid out, encoded
and decoded in a module of its own: ``rows`` (``ROWS`` and ``SYSTEM``, blocks of logged and system
rows, whose key lists a data file names once: ``keys``), ``config`` (``CONFIG``), ``event`` (``EVENT``), ``console`` (``CONSOLE``, printed lines, in a
process's console file) and ``table`` (``TABLE``, a table of samples, with the strings stored once per
process). This package is the one way in: ``codec.encode_rows``, ``codec.pack``, ``codec.unpack`` and
the names each kind's module defines. A reader skips a kind it does not know (a newer writer's), and
tells a run written in a newer format than ``FORMAT_VERSION`` (``kinds``) apart (``reader.run``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgpack

from . import config, console, event, rows, table
from .config import CONFIG_DATA, ConfigRecord, encode_config
from .console import BOTH, LINE_STREAMS, LINE_TEXTS, NOTE, STDERR, STDOUT, ConsoleRecord, encode_console
from .event import EVENT_DATA, EVENT_KIND, EVENT_STEP, EventRecord, encode_event
from .keys import MATRIX_REF, REDEFINE_VALUES, KeyLists, SharedKeys, list_id
from .kinds import (
    BOOL,
    CONFIG,
    CONSOLE,
    COUNT,
    EVENT,
    FLOAT,
    FORMAT_VERSION,
    INT,
    KEYS_FORMAT,
    KIND,
    OBJECT,
    ROWS,
    SYSTEM,
    TABLE,
    TIMES,
)
from .rows import (
    COLUMNS,
    MATRIX,
    MATRIX_KEYS,
    STEPS,
    Block,
    Rows,
    define,
    encode_rows,
    float_column,
    matrix_columns,
    matrix_keys,
    plain_columns,
    resolve,
)
from .table import (
    BODY,
    BODY_STRINGS,
    BODY_VALUES,
    CHAT,
    COMPRESS_FROM,
    FIRST_STRING,
    IMAGE,
    MISSING_TEXT,
    SEQUENCE,
    SHARED_MEMORY,
    SHARED_TEXT,
    STRING_COUNT,
    TABLE_COLUMNS,
    TABLE_KEY,
    TABLE_STEP,
    TEXT,
    ZIPPED,
    SharedStrings,
    StringIndex,
    TableRecord,
    encode_table,
)

#: each kind's decoder: an unpacked record (a dict) to its record object
_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    ROWS: rows.decode,
    SYSTEM: rows.decode,
    CONFIG: config.decode,
    EVENT: event.decode,
    CONSOLE: console.decode,
    TABLE: table.decode,
}


def pack(record: dict[str, Any]) -> bytes:
    """The payload bytes of a record."""
    return msgpack.packb(record, use_bin_type=True)


def unpack(
    payload: bytes,
) -> tuple[str, Block | ConfigRecord | EventRecord | ConsoleRecord | TableRecord] | None:
    """``(kind, decoded record)`` of a payload; None for a kind this version does not know (a newer
    writer's), which a reader skips. Raises on a payload that is not a record."""
    rec = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    kind = rec[KIND]
    decode = _DECODERS.get(kind)
    return None if decode is None else (kind, decode(rec))


def key_lists(payloads: Iterator[bytes], lists: KeyLists) -> None:
    """Take every key list the payloads define into ``lists``, and nothing else (what a reader that
    began in the middle of a file looks back for); a payload that does not decode is passed by (the
    read that meets it as a record reports it)."""
    for payload in payloads:
        try:
            rec = msgpack.unpackb(payload, raw=False, strict_map_key=False)
            found = rows.defined_list(rec) if isinstance(rec, dict) else None
        except Exception:
            continue
        if found is not None:
            lists.define(*found)


def unpack_all(payloads: Iterator[bytes], on_corrupt: Callable[[], None]) -> Iterator[tuple[str, Any]]:
    """Decode each payload; one that does not decode is reported through ``on_corrupt`` and skipped."""
    for payload in payloads:
        try:
            decoded = unpack(payload)
        except Exception:
            on_corrupt()
            continue
        if decoded is not None:
            yield decoded


__all__ = [
    "BODY",
    "BODY_STRINGS",
    "BODY_VALUES",
    "BOOL",
    "BOTH",
    "CHAT",
    "COLUMNS",
    "COMPRESS_FROM",
    "CONFIG",
    "CONFIG_DATA",
    "CONSOLE",
    "COUNT",
    "EVENT",
    "EVENT_DATA",
    "EVENT_KIND",
    "EVENT_STEP",
    "FIRST_STRING",
    "FLOAT",
    "FORMAT_VERSION",
    "IMAGE",
    "SEQUENCE",
    "INT",
    "KEYS_FORMAT",
    "KIND",
    "LINE_STREAMS",
    "LINE_TEXTS",
    "MATRIX",
    "MATRIX_KEYS",
    "MATRIX_REF",
    "MISSING_TEXT",
    "NOTE",
    "OBJECT",
    "REDEFINE_VALUES",
    "ROWS",
    "SHARED_MEMORY",
    "SHARED_TEXT",
    "STDERR",
    "STDOUT",
    "STEPS",
    "STRING_COUNT",
    "SYSTEM",
    "TABLE",
    "TABLE_COLUMNS",
    "TABLE_KEY",
    "TABLE_STEP",
    "TEXT",
    "TIMES",
    "ZIPPED",
    "Block",
    "ConfigRecord",
    "ConsoleRecord",
    "EventRecord",
    "KeyLists",
    "Rows",
    "SharedKeys",
    "SharedStrings",
    "StringIndex",
    "TableRecord",
    "encode_config",
    "encode_console",
    "encode_event",
    "encode_rows",
    "encode_table",
    "define",
    "float_column",
    "key_lists",
    "list_id",
    "matrix_columns",
    "matrix_keys",
    "pack",
    "plain_columns",
    "resolve",
    "unpack",
    "unpack_all",
]
