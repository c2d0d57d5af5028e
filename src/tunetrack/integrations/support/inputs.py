"""What a run was made from, as the adapters find it in the objects a framework hands them: the base
model, the training data set and the tokenizer, each named and identified without reading its bytes
(a hub revision, a hash of the config and the weight index, a ``datasets`` fingerprint, a hash of the
tokenizer's vocabulary). ``record`` logs them as the run's inputs (``Tracker.log_input``), so
``tunetrack lineage`` follows a data set or a checkpoint to every run that used it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._warnings import warn_once
from ...errors import one_line

#: the weight index (or, without one, the weight files' names and sizes) stands for a local model's weights
_INDEX = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_WEIGHTS = (".safetensors", ".bin")
#: ``datasets``' own loaders: their name says how files were read, not what the data set is
_GENERIC = {"json", "csv", "parquet", "text", "arrow", "generator", "pandas", "imagefolder", "audiofolder"}


@dataclass(frozen=True)
class Input:
    """One input of a run: ``location`` is a local path or a URL (``hf://name@revision``);
    ``digest`` None: a local file whose bytes identify it, hashed off the training thread."""

    name: str
    kind: str
    location: str
    digest: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


def _sha(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def model_input(model: Any) -> Input | None:
    """The base model: a local folder by its config and weight index, a hub model by its revision,
    a model built from a config alone by that config."""
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "to_json_string"):
        return None
    source = str(getattr(config, "_name_or_path", "") or "")
    text = config.to_json_string(use_diff=False)
    meta = {"model_type": getattr(config, "model_type", None)}
    if source and Path(source).is_dir():
        return model_folder_input(Path(source), text, meta)
    if source:
        revision = getattr(config, "_commit_hash", None)
        location = f"hf://{source}" + (f"@{revision}" if revision else "")
        return Input(source, "model", location, _sha(location) if revision else _sha(location, text), meta)
    name = str(meta["model_type"] or "model")
    return Input(name, "model", f"config://{name}", _sha(text), meta)


def model_folder_input(folder: Path, config: str | None = None, meta: dict[str, Any] | None = None) -> Input:
    """A model in a local folder, by its config (``config.json`` unless given) and its weight index
    (or its weight files' names and sizes): a folder of several GB is identified without reading it."""
    folder = folder.resolve()
    if config is None:
        config = (folder / "config.json").read_text() if (folder / "config.json").is_file() else ""
    weights = [folder / n for n in _INDEX if (folder / n).is_file()] or sorted(
        p for p in folder.iterdir() if p.suffix in _WEIGHTS
    )
    index = [p.read_text() if p.name in _INDEX else f"{p.name}:{p.stat().st_size}" for p in weights]
    return Input(folder.name, "model", str(folder), _sha(config, *index), meta or {})


def file_input(path: Path, kind: str, name: str | None = None) -> Input:
    """A local file or folder (a data set's files, a tokenizer model) by its bytes, hashed when the
    tracker stores the input, on a thread of its own."""
    path = path.resolve()
    return Input(name or path.name, kind, str(path), None, {})


def dataset_input(dataset: Any, role: str = "train") -> Input | None:
    """A ``datasets.Dataset`` by its fingerprint (what ``datasets`` itself caches by), also inside a
    wrapper that keeps it as ``.dataset`` (ms-swift's lazy encoding, torch's ``Subset``); None for
    data that has none (a plain list, a streaming data set)."""
    for _ in range(3):
        if hasattr(dataset, "_fingerprint") or not hasattr(dataset, "dataset"):
            break
        dataset = dataset.dataset
    fingerprint = getattr(dataset, "_fingerprint", None)
    if not isinstance(fingerprint, str):
        return None
    info = getattr(dataset, "info", None)
    named = getattr(info, "dataset_name", None) or getattr(info, "builder_name", None)
    name = named if named and named not in _GENERIC else f"{named or role}-{fingerprint[:8]}"
    files = [f.get("filename") for f in getattr(dataset, "cache_files", None) or [] if isinstance(f, dict)]
    location = f"datasets://{name}@{fingerprint}"
    meta = {"rows": getattr(dataset, "num_rows", None), "columns": getattr(dataset, "column_names", None)}
    if files:
        meta["cache_files"] = files[:10]
    return Input(name, "dataset", location, _sha("datasets", fingerprint), meta)


def tokenizer_input(tokenizer: Any) -> Input | None:
    """A tokenizer by a hash of its vocabulary and rules (the fast tokenizer's JSON where it has one)."""
    if tokenizer is None or not hasattr(tokenizer, "get_vocab"):
        return None
    inner = getattr(tokenizer, "tokenizer", None)  # a processor wraps its tokenizer
    if inner is not None and hasattr(inner, "get_vocab"):
        tokenizer = inner
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    source = str(getattr(tokenizer, "name_or_path", "") or "")
    digest = _sha(text)
    # a tokenizer built in the script has no name: its vocabulary's hash tells it apart
    name = (Path(source).name if source and Path(source).is_dir() else source) or f"tokenizer-{digest[:8]}"
    location = str(Path(source).resolve()) if source and Path(source).is_dir() else f"tokenizer://{name}"
    return Input(name, "tokenizer", location, digest, {"vocab_size": len(tokenizer.get_vocab())})


def record(tracker: Any, *found: Input | None) -> None:
    """Log each input found as the run's input; a failure is warned about once, never raised."""
    for inp in found:
        if inp is None:
            continue
        try:
            tracker.log_input(
                inp.location, name=inp.name, kind=inp.kind, digest=inp.digest, metadata=inp.metadata
            )
        except Exception as exc:
            warn_once(
                f"input:{inp.kind}", f"the run's {inp.kind} was not recorded as an input: {one_line(exc)}"
            )


def identify(model: Any = None, dataset: Any = None, tokenizer: Any = None) -> list[Input | None]:
    """Each input these objects name (None where one names nothing), never raising: an object of a
    kind not foreseen is passed by with a warning."""
    out: list[Input | None] = []
    for kind, fn, obj in (
        ("model", model_input, model),
        ("dataset", dataset_input, dataset),
        ("tokenizer", tokenizer_input, tokenizer),
    ):
        try:
            out.append(fn(obj) if obj is not None else None)
        except Exception as exc:
            warn_once(f"identify:{kind}", f"could not tell which {kind} the run used: {one_line(exc)}")
            out.append(None)
    return out
