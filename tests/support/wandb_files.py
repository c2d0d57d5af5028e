"""Reading a W&B run file (``run-<id>.wandb``, what offline mode writes and ``wandb sync`` uploads) with
W&B's own protobuf schema. The file is a LevelDB-style log: a 7-byte header (``:W&B``, a magic
number, a version), then records in 32 KiB blocks, each record (or fragment) behind a 7-byte header
(CRC-32, length, type: full, first, middle, last)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BLOCK, HEADER = 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> Iterator[Any]:
    """Every record of a ``.wandb`` file, parsed as ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, _magic, _version = struct.unpack("<4sHB", data[:HEADER])
    assert ident == b":W&B", ident
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        if BLOCK - pos % BLOCK < HEADER:  # too little room left in the block: padding
            pos += BLOCK - pos % BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 and length == 0:
            break  # zero padding at the end of a file still being written
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind in (FULL, FIRST):
            pending = chunk
        else:
            pending += chunk
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def read_run(path: Path, nested: str = "/") -> dict[str, Any]:
    """What a W&B run file holds: run id, name, tags, config, history rows by step, summary, exit code.
    A nested dict's keys are joined with ``nested`` (W&B's own exports join them with ``.``)."""
    import json

    out: dict[str, Any] = {"history": {}, "config": {}, "summary": {}, "exit_code": None}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out.update(id=record.run.run_id, name=record.run.display_name, tags=list(record.run.tags))
            for item in record.run.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                out["config"][item.key or ".".join(item.nested_key)] = json.loads(item.value_json)
        elif kind == "history":
            row = {
                (item.key or nested.join(item.nested_key)): json.loads(item.value_json)
                for item in record.history.item
            }
            step = record.history.step.num if record.history.HasField("step") else row.get("_step")
            out["history"].setdefault(int(step), {}).update(row)
        elif kind == "summary":
            for item in record.summary.update:
                out["summary"][item.key or nested.join(item.nested_key)] = json.loads(item.value_json)
        elif kind == "exit":
            out["exit_code"] = record.exit.exit_code
    return out


def run_files(wandb_dir: Path) -> list[Path]:
    """The run files under a W&B folder (``offline-run-*/run-*.wandb``), oldest first."""
    return sorted(wandb_dir.glob("**/offline-run-*/run-*.wandb"))
