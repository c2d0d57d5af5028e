"""Key lists named once per data file (format 2): a rows block whose rows share their float keys refers
to its list of keys by the list's id instead of repeating the names.

Why: a mixture-of-experts run logs 10,240 keys a step, and a block of six such rows spent a third of its
bytes, and two thirds of a reader's decoding, on the same 10,240 names, block after block.

Fields of a ``ROWS`` (or ``SYSTEM``) block beside ``m`` and ``x`` (``rows``):

- ``mi``: the id of the block's key list, the first 8 bytes (little-endian, unsigned) of the BLAKE2b
  digest of the msgpack bytes of the list: a checksum of the names, not a counter, so a block is
  never read with another list (a reader checks the names it is given against the id);
- ``m``: the names, only in a block that defines the list: the first block of a data file that uses
  it, and the next one after ``REDEFINE_VALUES`` values (steps and times counted) were written under
  it, about 32 MiB however wide the rows: a damaged definition costs a bounded stretch of the file,
  and a reader that starts in the middle of a file (a tail) finds a definition within about that many
  bytes before where it starts.

A block without ``mi`` holds its own names (format 1, and format 2 for lists that are not shared).
Definitions are per data file (one writing process): a resumed run's new process defines its lists
again. The writer's side is ``SharedKeys``; the reader's ``KeyLists``, kept per file across
incremental reads (``rows.resolve`` gives a block its names). A block whose list is not found is
reported and skipped (``reader.records``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgpack

#: the field of a block that names its key list by id
MATRIX_REF = "mi"
#: values written under a list (a row's step and time count as two) after which its names are stored
#: again: 32 MiB of 8-byte numbers
REDEFINE_VALUES = 1 << 22
#: key lists the writer remembers; one seen again after this many others is simply defined again
SHARED_LISTS = 64


def list_id(keys: list[str]) -> int:
    """The id of a key list: a checksum of its names, in their order."""
    digest = hashlib.blake2b(msgpack.packb(keys, use_bin_type=True), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class SharedKeys:
    """The writer's side, for one data file: the key lists it defined, by id, and how many values were
    written under each since its names were last stored. ``forget`` after a write that may have
    failed: every list is then defined again where next used."""

    __slots__ = ("_last", "_last_id", "_names", "_since")

    def __init__(self) -> None:
        self._last: list[str] | None = None
        self._last_id = 0
        self._since: dict[int, int] = {}
        self._names: dict[int, list[str]] = {}

    def ref(self, keys: list[str], values: int) -> tuple[int, bool]:
        """``(id, define)`` for a block of ``values`` values under ``keys``: ``define`` when the block
        must carry the names. The id is computed only when the list changes from the last block's
        (a list compare: the names are the same objects from step to step)."""
        if keys != self._last:
            self._last, self._last_id = keys, list_id(keys)
        ident = self._last_id
        since = self._since.get(ident)
        define = since is None or since >= REDEFINE_VALUES
        if define:
            self._since.pop(ident, None)  # the most recently defined last: the oldest are forgotten first
            self._names.pop(ident, None)
            self._names[ident] = keys
            if len(self._names) > SHARED_LISTS:
                oldest = next(iter(self._names))
                del self._names[oldest], self._since[oldest]
        self._since[ident] = values if define else since + values  # type: ignore[operator]
        return ident, define

    def names(self, ident: int) -> list[str] | None:
        """The names of a list this file defined (what the writer's own checks read a block with)."""
        return self._names.get(ident)

    def forget(self) -> None:
        self._last = None
        self._since.clear()
        self._names.clear()


class KeyLists:
    """The reader's side, for one data file: the key lists defined so far, by id, each with its names'
    positions built once (a block of 10,240 keys is then not indexed block by block)."""

    __slots__ = ("_lists",)

    def __init__(self) -> None:
        self._lists: dict[int, tuple[list[str], dict[str, int]]] = {}

    def __contains__(self, ident: object) -> bool:
        return ident in self._lists

    def define(self, ident: Any, names: Any) -> bool:
        """Take a list's definition; False (and nothing taken) if the names are not the list ``ident``
        names (a writer's bug or a forged file: never read as that list)."""
        known = self._lists.get(ident)
        if known is not None:  # defined again (``REDEFINE_VALUES``): the same names, or not this list
            return names is known[0] or names == known[0]
        if not isinstance(names, list) or not all(type(k) is str for k in names) or list_id(names) != ident:
            return False
        self._lists[ident] = (names, {k: i for i, k in enumerate(names)})
        return True

    def get(self, ident: Any) -> tuple[list[str], dict[str, int]] | None:
        """``(names, each name's position)`` of a list defined so far, or None."""
        return self._lists.get(ident)
