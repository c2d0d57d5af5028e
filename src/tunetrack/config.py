"""Config capture: any configuration object becomes JSON-safe nested data, and never raises.

Training scripts hand trackers everything from plain dicts to ``TrainingArguments``, PEFT configs
(which hold sets), OmegaConf trees with interpolations, dataclasses and pydantic models. Capture
walks them defensively (cycles cut, depth and size capped, ``repr`` as the last resort) and redacts
values under keys that look like secrets, so a run folder can be shared.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

REDACTED = "***REDACTED***"
MAX_DEPTH = 20
MAX_STR = 10_000
MAX_ITEMS = 1_000

_SECRET = re.compile(r"token|passw(or)?d|secret|api_?key|access_?key|private_?key|credential|auth", re.I)
# Keys that contain a secret word but name something public (tokenizers, token counts, ids).
_NOT_SECRET = re.compile(
    r"tokeniz|token_id|tokens?_(per|count|seen|len|num)|(max|num|min|total|n)_?(new_)?tokens?$"
    r"|^tokens?$|author|_tokens$|token_type|special_tokens|tokens_seen",
    re.I,
)


def is_secret_key(key: str) -> bool:
    """True for keys such as ``hub_token``, ``HF_TOKEN``, ``db_password``, ``wandb_api_key``."""
    return bool(_SECRET.search(key)) and not _NOT_SECRET.search(key)


def capture(obj: Any) -> dict[str, Any]:
    """A JSON-safe nested dict of ``obj`` (a non-mapping becomes ``{"value": ...}``)."""
    try:
        value = _walk(obj, 0, set())
    except Exception as exc:  # capture must never take training down
        value = f"<uncapturable {type(obj).__name__}: {exc!r}>"
    return value if isinstance(value, dict) else {"value": value}


def _walk(obj: Any, depth: int, seen: set[int]) -> Any:
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj if not isinstance(obj, enum.Enum) else _walk(obj.value, depth, seen)
    if isinstance(obj, str):
        return obj if len(obj) <= MAX_STR else obj[:MAX_STR] + f"...<{len(obj) - MAX_STR} more chars>"
    if isinstance(obj, enum.Enum):
        return _walk(obj.value, depth, seen)
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, (bytes, bytearray)):
        try:
            return _walk(bytes(obj).decode(), depth, seen)
        except UnicodeDecodeError:
            return _walk(repr(bytes(obj[:MAX_STR])), depth, seen)
    if depth >= MAX_DEPTH:
        return f"<depth limit: {type(obj).__name__}>"
    if id(obj) in seen:
        return "<cycle>"
    seen = seen | {id(obj)}
    module = type(obj).__module__.split(".")[0]
    if module == "torch" and type(obj).__name__ in ("dtype", "device"):
        return str(obj)
    if module == "numpy":
        if hasattr(obj, "ndim") and getattr(obj, "size", 2) > MAX_ITEMS:
            return f"<array shape={obj.shape} dtype={obj.dtype}>"
        if hasattr(obj, "tolist"):
            return _walk(obj.tolist(), depth, seen)
    if module == "omegaconf":
        return _walk(_omegaconf(obj), depth, seen)
    if isinstance(obj, Mapping):
        return _mapping(obj.items(), depth, seen)
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = list(obj)
        if isinstance(obj, (set, frozenset)):
            with contextlib.suppress(TypeError):
                items = sorted(items)
        out = [_walk(v, depth + 1, seen) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            out.append(f"<{len(items) - MAX_ITEMS} more items>")
        return out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_dict"):  # TrainingArguments masks its tokens in to_dict()
            return _walk(_call(obj.to_dict), depth, seen)
        return _mapping(((f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj)), depth, seen)
    for method in ("model_dump", "to_dict", "to_container"):  # pydantic v2, HF/PEFT configs
        fn = getattr(obj, method, None)
        if callable(fn) and not isinstance(obj, type):
            result = _call(fn)
            if not isinstance(result, _Failed):
                return _walk(result, depth, seen)
    if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
    if hasattr(obj, "dict") and callable(obj.dict) and module == "pydantic":  # pydantic v1
        return _walk(_call(obj.dict), depth, seen)
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict) and attrs:  # argparse.Namespace and plain objects
        return _mapping(((k, v) for k, v in attrs.items() if not k.startswith("_")), depth, seen)
    return _repr(obj)


class _Failed:
    pass


def _call(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return _Failed()


def _mapping(items: Any, depth: int, seen: set[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (key, value) in enumerate(items):
        if i >= MAX_ITEMS:
            out["<truncated>"] = "more keys were not captured"
            break
        name = key if isinstance(key, str) else str(_walk(key, depth + 1, seen))
        if is_secret_key(name) and value not in (None, "", False, True):
            out[name] = REDACTED
        else:
            out[name] = _walk(value, depth + 1, seen)
    return out


def _repr(obj: Any) -> str:
    try:
        text = repr(obj)
    except Exception:
        return f"<unrepresentable {type(obj).__name__}>"
    return text if len(text) <= MAX_STR else text[:MAX_STR] + "...>"


def _omegaconf(cfg: Any) -> Any:
    """Resolve interpolations; one that cannot be resolved is kept as its raw ``${...}`` string."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except Exception:
        pass
    if isinstance(cfg, DictConfig):
        out: dict[str, Any] = {}
        for key in cfg:
            node = cfg._get_node(key)
            try:
                out[str(key)] = (
                    _omegaconf(cfg[key]) if isinstance(node, (DictConfig, ListConfig)) else cfg[key]
                )
            except Exception:
                out[str(key)] = node._value() if node is not None and hasattr(node, "_value") else str(node)
        return out
    if isinstance(cfg, ListConfig):
        return [_omegaconf(v) if isinstance(v, (DictConfig, ListConfig)) else v for v in cfg]
    return cfg


def flatten(nested: Mapping[str, Any], sep: str = ".") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` → ``{"a.b": 1}``; lists stay values, empty dicts stay ``{}``."""
    out: dict[str, Any] = {}
    for key, value in nested.items():
        if isinstance(value, Mapping) and value:
            for sub, leaf in flatten(value, sep).items():
                out[f"{key}{sep}{sub}"] = leaf
        else:
            out[key] = value
    return out


def merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge for repeated ``log_config`` calls: ``update`` wins, nested dicts merge."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out
