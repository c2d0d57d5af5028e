"""Config capture: any configuration object becomes JSON-safe nested data, and capture never raises.

Training scripts hand trackers everything from plain dicts to ``TrainingArguments``, PEFT configs
(which hold sets), OmegaConf trees with interpolations, dataclasses and pydantic models. Capture runs
inside the user's training, so it walks them defensively: cycles are cut, depth and sizes are capped,
``repr`` is the last resort, and a value that cannot be converted only replaces itself with a marker.
Values under keys that look like secrets are redacted, so a run folder can be shared.

No ML framework is imported here: torch and NumPy values are recognised by their type's module, and
omegaconf is imported only when an omegaconf object is captured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import types
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ..redact import REDACTED, is_secret_key

MAX_DEPTH = 20
MAX_STR = 10_000
MAX_ITEMS = 1_000


def capture(obj: Any) -> dict[str, Any]:
    """A nested dict of only dict/list/str/int/float/bool/None (floats may be NaN/Inf).

    A value that is not a mapping (and does not convert to one) is returned as ``{"value": ...}``
    so the run's config is always a dict that ``merge`` and ``flatten`` accept.
    """
    value = _walk(obj, 0, frozenset())
    return value if isinstance(value, dict) else {"value": value}


def _walk(obj: Any, depth: int, seen: frozenset[int]) -> Any:
    """Converts one value; any failure replaces only this value, never the whole capture."""
    try:
        return _convert(obj, depth, seen)
    except Exception:
        return f"<unrepresentable {type(obj).__name__}>"


def _convert(obj: Any, depth: int, seen: frozenset[int]) -> Any:
    if obj is None or type(obj) in (bool, int, float):
        return obj
    if isinstance(obj, enum.Enum):
        return _walk(obj.value, depth + 1, seen)
    if isinstance(obj, str):  # subclasses (numpy.str_) become plain str
        return _text(str.__str__(obj))
    if isinstance(obj, int):
        return int.__int__(obj)
    if isinstance(obj, float):  # numpy.float64 is a float subclass
        return float.__float__(obj)
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, (bytes, bytearray)):
        return _text(bytes(obj).decode(errors="backslashreplace"))
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if callable(obj) and hasattr(obj, "__qualname__"):  # functions, methods, classes
        return f"{getattr(obj, '__module__', None) or '?'}.{obj.__qualname__}"
    if depth >= MAX_DEPTH:
        return f"<max depth: {type(obj).__name__}>"
    if id(obj) in seen:
        return "<cycle>"
    seen = seen | {id(obj)}
    package = (type(obj).__module__ or "").split(".")[0]
    if package == "torch" and type(obj).__name__ in ("dtype", "device"):
        return str(obj)
    if package == "numpy":
        if getattr(obj, "size", 0) > MAX_ITEMS:
            return f"<{type(obj).__name__} shape={obj.shape} dtype={obj.dtype}>"
        return _walk(obj.tolist(), depth + 1, seen) if hasattr(obj, "tolist") else str(obj)
    if package == "omegaconf":
        return _walk(_omegaconf(obj), depth + 1, seen)
    if isinstance(obj, Mapping):
        return _mapping(list(obj.items()), depth, seen)
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = list(obj)
        if isinstance(obj, (set, frozenset)):
            with contextlib.suppress(Exception):  # sorted so that equal configs capture equally
                items = sorted(items)
        out = [_walk(v, depth + 1, seen) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            out.append(f"<{len(items) - MAX_ITEMS} more items>")
        return out
    # pydantic v2; Hugging Face TrainingArguments/PretrainedConfig and PEFT configs (to_dict masks hub tokens).
    for name in ("model_dump", "to_dict"):
        method = getattr(obj, name, None)
        if callable(method):
            with contextlib.suppress(Exception):  # a failing converter falls back to the next way
                return _walk(method(), depth + 1, seen)
    if dataclasses.is_dataclass(obj):
        return _mapping([(f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj)], depth, seen)
    attrs = getattr(obj, "__dict__", None)  # argparse.Namespace, plain objects, pydantic v1 models
    public = (
        [(k, v) for k, v in attrs.items() if not str(k).startswith("_")] if isinstance(attrs, dict) else []
    )
    return _mapping(public, depth, seen) if public else _text(repr(obj))


def _mapping(pairs: list[tuple[Any, Any]], depth: int, seen: frozenset[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs[:MAX_ITEMS]:
        name = str(_walk(key, depth + 1, seen))
        out[name] = REDACTED if is_secret_key(name) and not _blank(value) else _walk(value, depth + 1, seen)
    if len(pairs) > MAX_ITEMS:
        out["<truncated>"] = f"<{len(pairs) - MAX_ITEMS} more keys>"
    return out


def _blank(value: Any) -> bool:
    """None, a bool or an empty value reveals no secret (``use_auth_token=True``, ``hub_token=None``)."""
    if value is None or isinstance(value, bool):
        return True
    return isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) and not value


def _text(text: str) -> str:
    return text if len(text) <= MAX_STR else f"{text[:MAX_STR]}...<{len(text) - MAX_STR} more chars>"


def _omegaconf(cfg: Any) -> Any:
    """The resolved container; an interpolation that cannot be resolved stays its raw ``${...}`` string."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # resolve node by node; nested configs are resolved when _walk reaches them
        raw: Any = OmegaConf.to_container(cfg, resolve=False)
    out = {}
    for key in list(raw) if isinstance(raw, dict) else range(len(raw)):
        try:
            out[key] = cfg[key]
        except Exception:
            out[key] = raw[key]
    return out if isinstance(raw, dict) else list(out.values())
