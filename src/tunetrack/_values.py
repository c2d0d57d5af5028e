"""Logged values: the caller-side snapshot and the writer-side conversion.

The caller's thread only makes sure a value cannot change after ``log()`` returns: immutable
scalars pass untouched, tensors are cloned (an asynchronous copy on the tensor's own stream, so
no GPU synchronisation happens on the training thread), nested dicts are flattened. Converting a
clone to a Python number (``.item()``, which does synchronise) happens later, on the writer.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from .errors import InvalidValue

#: Types that need no snapshot. NumPy scalar types are added the first time one is seen, so the
#: fast path never has to import NumPy.
FAST_TYPES: set[type] = {float, int, bool, str, type(None)}


class Unsupported:
    """Stands in for a value tunetrack cannot store; the writer warns once per key and drops it."""

    __slots__ = ("typename",)

    def __init__(self, value: object) -> None:
        self.typename = f"{type(value).__module__}.{type(value).__qualname__}"


def _is_tensor(value: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _is_numpy(value: object, kind: str) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, getattr(np, kind))


def snapshot_value(value: Any) -> Any:
    """Freeze one value on the caller's thread; mutable things are copied, odd things marked."""
    if type(value) in FAST_TYPES:
        return value
    if _is_tensor(value):
        if value.numel() != 1:
            return Unsupported(value)
        if value.device.type == "cpu":
            return value.detach().reshape(()).item()
        return value.detach().reshape(()).clone()
    if _is_numpy(value, "generic"):
        FAST_TYPES.add(type(value))
        return value
    if _is_numpy(value, "ndarray") and value.size == 1:
        return value.reshape(()).item()
    return Unsupported(value)


def snapshot(metrics: Mapping[Any, Any], strict: bool) -> dict[Any, Any]:
    """The slow path of ``Tracker.log``: flatten nested mappings (``a/b``) and freeze every value."""
    out: dict[Any, Any] = {}
    _flatten_into(metrics, "", out, strict)
    return out


def _flatten_into(metrics: Mapping[Any, Any], prefix: str, out: dict[Any, Any], strict: bool) -> None:
    for key, value in metrics.items():
        name = f"{prefix}{key}" if prefix else key
        if isinstance(value, Mapping):
            _flatten_into(value, f"{name}/", out, strict)
            continue
        frozen = snapshot_value(value)
        if strict and isinstance(frozen, Unsupported):
            raise InvalidValue(f"tunetrack cannot log {name!r}: unsupported type {frozen.typename}")
        out[name] = frozen


#: Returned by ``to_python`` for a value that must be dropped.
DROP = object()


def to_python(value: Any) -> Any:
    """Writer side: a plain Python scalar for storage, or ``DROP``."""
    if type(value) in (float, int, bool, str) or value is None:
        if type(value) is int and not -(2**63) <= value < 2**63:
            return float(value)
        return value
    if isinstance(value, Unsupported):
        return DROP
    try:
        item = value.item()  # NumPy scalars and tensor clones; a CUDA clone synchronises here.
    except Exception:
        return DROP
    return to_python(item) if type(item) in (float, int, bool, str) else DROP
