"""A run's config as a tree of nested dicts: merged as it grows, flattened to dotted keys, compared.

The comparison is the one every view uses (``tunetrack diff``, ``compare --group-by``, the dashboard's
compare, diff and groups, a sweep's varying keys), so two runs never differ in one place and agree in
another. Config values are data, not Python: ``True``
and ``1`` differ, ``NaN`` equals ``NaN`` (the same setting), and a key that is missing differs from a
key set to ``None``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Hashable, Mapping, Sequence
from typing import Any


class _Missing:
    """A key one config does not have (``None`` is a value a config can hold)."""

    def __repr__(self) -> str:
        return "(not set)"


MISSING: Any = _Missing()


def flatten(nested: Mapping[str, Any], sep: str = ".") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` so two runs' configs diff key by key.

    Lists stay single values (a changed list is one difference), and an empty dict stays ``{}``
    so the key is not lost.
    """
    out: dict[str, Any] = {}
    for key, value in nested.items():
        if isinstance(value, Mapping) and value:
            for sub, leaf in flatten(value, sep).items():
                out[f"{key}{sep}{sub}"] = leaf
        else:
            out[key] = value
    return out


def merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge for repeated ``log_config`` calls: nested dicts merge, otherwise ``update`` wins.

    Neither argument is modified, so a config already handed to a backend never changes under it.
    """
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def setting(value: Any) -> Hashable:
    """A hashable stand-in for a config value, equal for two values exactly when they are the same
    setting: what runs are grouped by (a dict keyed by it), so a grouping and ``same`` cannot
    disagree. ``1`` and ``1.0`` are one setting (a number), ``True`` and ``1`` are not (a flag is no
    number), every NaN is one setting, and ``MISSING`` is only itself."""
    if value is MISSING:
        return (_Missing,)
    if isinstance(value, bool):
        return (bool, value)
    if isinstance(value, float) and math.isnan(value):
        return (float, "nan")
    if isinstance(value, list):
        return (list, tuple(setting(v) for v in value))
    if isinstance(value, dict):
        return (dict, frozenset((k, setting(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return (object, repr(value))
    return (None, value)  # numbers (1 == 1.0), text, None


def same(a: Any, b: Any) -> bool:
    """Whether two config values are the same setting (``setting`` says what that is)."""
    return setting(a) == setting(b)


def diff(flats: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    """``(key, [each config's value, or MISSING])`` for every flat key whose values are not all the
    same, in key order."""
    out = []
    for key in sorted(set().union(*flats)):
        values = [flat.get(key, MISSING) for flat in flats]
        if not all(same(values[0], v) for v in values[1:]):
            out.append((key, values))
    return out


def text(value: Any) -> str:
    """A config value as the dashboard prints it: a string as it is; anything else as Python writes
    it, with every float as ``number`` prints it (also inside lists and dicts)."""
    return value if isinstance(value, str) else _literal(value)


def _literal(value: Any) -> str:
    if isinstance(value, float):
        return number(value)
    if isinstance(value, (list, tuple)):
        return f"[{', '.join(map(_literal, value))}]"
    if isinstance(value, Mapping):
        return f"{{{', '.join(f'{k!r}: {_literal(v)}' for k, v in value.items())}}}"
    return repr(value)


def number(x: float) -> str:
    """The shortest text that reads back as ``x`` at the precision it carries, so a value prints as
    it was meant rather than with the noise of its last bits.

    A float32 widened to a float64 (a NumPy or torch scalar handed over) reads back as that float32:
    ``np.float32(3e-4)`` is ``0.0003``, not ``0.0003000000142492354``. Any other float is rounded to 15
    significant digits, the decimal precision a float64 keeps (every 15-digit decimal reads into a
    float64 and prints back the same), which drops the error arithmetic leaves in the last bits:
    ``0.1 * 3e-3`` is ``0.0003``, not ``0.00030000000000000003``. A value exact to the bit is one
    ``repr`` away (the API's raw config; the compare table falls back to it where two values that
    differ would print the same)."""
    if not math.isfinite(x):
        return repr(x)
    if _float32(x) == x:
        shortest = next(s for p in range(1, 10) if _float32(float(s := f"{x:.{p}g}")) == x)
        return repr(float(shortest))
    return repr(float(f"{x:.15g}"))


def _float32(x: float) -> float:
    """``x`` rounded to the nearest float32 (NaN beyond its range)."""
    try:
        return float(struct.unpack("f", struct.pack("f", x))[0])
    except OverflowError:
        return math.nan
