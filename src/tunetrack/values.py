"""Logged values, from the caller's dict to plain scalars: frozen on the caller's thread, converted on
the writer's.

The caller's thread only makes sure a value cannot change after ``log()`` returns: immutable
scalars pass untouched, nested dicts are flattened, and a CUDA tensor starts a non-blocking copy
into pinned host memory followed by an event (``DeviceCopy``), so no GPU synchronisation happens on
the training thread. The writer waits for that event by polling it, never by a synchronising call,
so a run under ``torch.cuda.set_sync_debug_mode("error")`` keeps every value; only then does it
read the number (``to_plain``). Tensors on other accelerators are cloned on their own stream and
read with ``.item()`` on the writer. Arrays are not metrics: an adapter whose host logs them (Accelerate's DDPO) turns
them into summary statistics first (``summarize_arrays``).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard, TypeVar

from .errors import InvalidValue
from .histograms import Histogram

#: Types that need no snapshot. NumPy scalar types are added the first time one is seen, so the
#: fast path never has to import NumPy.
FAST_TYPES: set[type] = {float, int, bool, str, type(None)}
#: What the store keeps: a value of another type is converted (``to_plain``) or dropped.
PLAIN_TYPES = (float, int, bool, str, type(None))


def is_number(value: Any) -> bool:
    """Whether ``value`` is a number as a metric, a config value or a cell holds one: an int or a
    float, never a bool (``True`` is ``1`` to Python, not to a table, a filter or a chart). The one
    test every reader, view and adapter uses, so none counts a flag as a number and another not."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite_number(value: Any) -> TypeGuard[float]:
    """``is_number`` and neither NaN nor ±Inf (an int too large for a float is still finite): what a
    chart, a mean or a JSON answer can hold."""
    if not is_number(value):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return True


def is_chat(value: object) -> TypeGuard[list[Mapping[str, Any]]]:
    """Whether a logged value is a conversation: a non-empty list of messages, each a mapping with a
    ``role`` (``{"role": "user", "content": ...}``). The writer stores one as messages and every
    reader shows one as ``role: content`` lines, so both must agree on what one is."""
    return (
        isinstance(value, list) and bool(value) and all(isinstance(m, Mapping) and "role" in m for m in value)
    )


T = TypeVar("T")


def missing_last(items: Sequence[T], value: Callable[[T], Any], descending: bool = False) -> list[T]:
    """``items`` ordered by ``value(item)``, stable, with what has no place in the order last in
    either direction (as pandas' ``sort_values`` puts NaN): None, NaN, a list or dict, and a value of
    another kind than the first kind present (numbers come before text). The one ordering of
    ``ls --sort``, ``samples --sort``, the agents' ``list_runs`` and ``compare --group-by``'s groups."""
    ranked: list[tuple[int, Any, T]] = []
    for item in items:
        v = value(item)
        if v is None or (isinstance(v, float) and v != v) or isinstance(v, (list, dict)):
            ranked.append((2, 0, item))
        else:
            ranked.append((0, v, item) if is_number(v) else (1, str(v), item))
    kind = min((k for k, _, _ in ranked if k < 2), default=0)  # numbers, else text
    keep = [(v, item) for k, v, item in ranked if k == kind]
    keep.sort(key=lambda p: p[0], reverse=descending)
    return [item for _, item in keep] + [item for k, _, item in ranked if k != kind]


class Unsupported:
    """Stands in for a value tunetrack cannot store; the writer warns once per key and drops it."""

    __slots__ = ("typename",)

    def __init__(self, value: object) -> None:
        self.typename = f"{type(value).__module__}.{type(value).__qualname__}"


def _is_tensor(value: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


class DeviceCopy:
    """A CUDA value on its way to the host: the copy was queued on the tensor's stream after
    everything that produced it (and before any in-place change the caller makes next), and ``done``
    is recorded right behind it."""

    __slots__ = ("host", "done")

    def __init__(self, tensor: Any) -> None:
        torch = sys.modules["torch"]
        self.host = tensor.detach().reshape(()).to("cpu", non_blocking=True)  # pinned, asynchronous
        self.done = torch.cuda.Event()
        self.done.record(torch.cuda.current_stream(tensor.device))

    def item(self) -> Any:
        """The number, once the copy has landed. ``Event.query`` never synchronises the device, and
        the writer thread is the one that waits (a few ms at most behind the training step)."""
        delay = 0.0001
        while not self.done.query():
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
        return self.host.item()  # a host tensor: no device involved


def _is_numpy(value: object, kind: str) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, getattr(np, kind))


def _flatten_into(
    metrics: Mapping[Any, Any], prefix: str, out: dict[Any, Any], leaf: Callable[[Any, Any, dict], None]
) -> None:
    """Nested mappings become ``a/b`` keys; ``leaf(name, value, out)`` stores each other value."""
    for key, value in metrics.items():
        name = f"{prefix}{key}" if prefix else key
        if isinstance(value, Mapping):
            _flatten_into(value, f"{name}/", out, leaf)
        else:
            leaf(name, value, out)


# -- the caller's thread -----------------------------------------------------------------------------
def snapshot_value(value: Any) -> Any:
    """Freeze one value on the caller's thread; mutable things are copied, odd things marked."""
    if type(value) in FAST_TYPES:
        return value
    if _is_tensor(value):
        if value.numel() != 1:
            return Unsupported(value)
        if value.device.type == "cpu":
            return value.detach().reshape(()).item()
        if value.device.type == "cuda":
            return DeviceCopy(value)
        return value.detach().reshape(()).clone()
    if _is_numpy(value, "generic"):
        FAST_TYPES.add(type(value))
        return value
    if _is_numpy(value, "ndarray") and value.size == 1:
        return value.reshape(()).item()
    if isinstance(value, Histogram):
        return value  # made once by the caller; the tracker records it as an event
    return Unsupported(value)


def snapshot(metrics: Mapping[Any, Any], strict: bool) -> dict[Any, Any]:
    """The slow path of ``Tracker.log``: flatten nested mappings (``a/b``) and freeze every value."""

    def freeze(name: Any, value: Any, out: dict[Any, Any]) -> None:
        frozen = snapshot_value(value)
        if strict and isinstance(frozen, Unsupported):
            raise InvalidValue(f"tunetrack cannot log {name!r}: unsupported type {frozen.typename}")
        out[name] = frozen

    out: dict[Any, Any] = {}
    _flatten_into(metrics, "", out, freeze)
    return out


def numbers(row: Mapping[Any, Any]) -> dict[str, Any]:
    """The numbers of a row as logged (one-element tensors read, even on a device): what a
    checkpoint saved at the row's step carries. Called at a save, never on the hot path."""
    out = {}
    for key, value in row.items():
        if is_number(plain := to_plain(snapshot_value(value))):
            out[str(key)] = plain
    return out


def summarize_arrays(values: Mapping[str, Any]) -> Mapping[str, Any]:
    """Replace arrays, multi-element tensors and lists of numbers (nested dicts too, as ``a/b``) by
    ``key/mean``, ``key/std``, ``key/min``, ``key/max`` and ``key/count``; the rest is untouched.

    Tensor statistics stay tensors on their device (no GPU synchronisation here): ``log()`` copies
    them and the writer converts them.
    """
    if all(type(v) in FAST_TYPES for v in values.values()):
        return values  # the common case: nothing to do, no copy

    def summarize(name: Any, value: Any, out: dict[Any, Any]) -> None:
        stats = None if type(value) in FAST_TYPES else _stats(value)
        if stats is None:
            out[name] = value  # a scalar (or something log() will warn about)
        else:
            out.update({f"{name}/{stat}": v for stat, v in stats.items()})

    out: dict[Any, Any] = {}
    _flatten_into(values, "", out, summarize)
    return out


def _stats(value: Any) -> dict[str, Any] | None:
    """mean/std/min/max/count of an array-like of numbers, or None for anything else."""
    if _is_tensor(value):
        if value.numel() == 1 or value.is_complex():
            return None
        flat = value.detach().flatten()
        flat = flat if str(flat.dtype) == "torch.float64" else flat.float()
        if flat.numel() == 0:
            return {"count": 0}
        return {
            "mean": flat.mean(),
            "std": flat.std(correction=0),
            "min": flat.amin(),
            "max": flat.amax(),
            "count": int(flat.numel()),
        }
    if _is_numpy(value, "ndarray"):
        if value.size == 1 or value.dtype.kind not in "biuf":
            return None
        array = value.astype("float64").ravel()
    elif isinstance(value, (list, tuple)) and all(type(v) in (int, float) for v in value):
        import numpy as np

        array = np.asarray(value, dtype=np.float64)
    else:
        return None
    if array.size == 0:
        return {"count": 0}
    return {
        "mean": float(array.mean()),
        "std": float(array.std()),
        "min": float(array.min()),
        "max": float(array.max()),
        "count": int(array.size),
    }


# -- the writer's thread -----------------------------------------------------------------------------
#: Returned by ``to_plain`` for a value that must be dropped.
DROP = Unsupported(None)


def to_plain(value: Any) -> Any:
    """Writer side: a plain Python scalar for storage, or ``DROP``."""
    if type(value) in PLAIN_TYPES:
        if type(value) is int and not -(2**63) <= value < 2**63:
            return float(value)
        return value
    if isinstance(value, Unsupported):
        return DROP
    try:
        item = value.item()  # NumPy scalars, DeviceCopy, other devices' clones (which synchronise)
    except Exception:
        return DROP
    return to_plain(item) if type(item) in PLAIN_TYPES and item is not None else DROP
