"""The names a user types, resolved against what runs hold: a metric under another framework's
spelling (``eval/loss`` finds ``eval_loss``, ``metric_keys.spellings``), a short config name (``lr``
finds ``args.learning_rate``, ``config.names``), and a name that nothing holds, which is an
``UnknownName`` naming the closest names that exist, never an empty answer.

Every reader that takes a name from a person goes through here: ``--where`` and ``--sort``
(``where``), ``compare --group-by`` and ``--metric`` (``groups``), ``samples --sort`` (``samples``),
``Run.series``, the dashboard's boxes and the agents' tools.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Iterable, Mapping
from fnmatch import translate
from functools import cache
from typing import Any

from .. import aggregates
from ..config import same
from ..config.names import ALIASES, patterns
from ..errors import AmbiguousName, UnknownName
from ..states import STATES

#: how many close names an error offers
SUGGESTED = 3
#: how many runs' configs an error's suggestions are drawn from (the first ones asked about)
CONFIGS_SUGGESTED = 200


@cache
def _glob(pattern: str) -> re.Pattern[str] | None:
    return re.compile(translate(pattern)) if any(c in pattern for c in "*?[") else None


def config_key(flat: Mapping[str, Any], name: str) -> str | None:
    """The key of the flat config ``flat`` that ``name`` finds (``config.names.patterns``): itself,
    else the first alias the config has (``lr``: ``args.learning_rate``, ``optimizer.lr``, ...), else
    the key it ends (``learning_rate``: ``args.learning_rate``); None if none. Several keys found by
    one pattern are one when their values agree (LLaMA Factory records the learning rate twice), else
    an ``AmbiguousName``."""
    if name in flat:
        return name
    for pattern in patterns(name)[1:]:
        rx = _glob(pattern)
        if rx is None:
            if pattern in flat:
                return pattern
            continue
        found = [k for k in flat if rx.match(k)]
        if found and all(same(flat[k], flat[found[0]]) for k in found[1:]):
            return found[0]
        if found:
            raise AmbiguousName(
                f"config key {name!r} could be {', '.join(found[:5])}, which differ: name one in full"
            )
    return None


def short_names(flats: Iterable[Mapping[str, Any]]) -> list[str]:
    """The short names (``config.names.ALIASES``: ``lr``, ``lora.r``) that find a key in one of
    ``flats``: names an error may offer beside the keys themselves."""
    out: dict[str, None] = {}
    for flat in flats:
        for name in ALIASES:
            if name not in out and name not in flat:
                with contextlib.suppress(AmbiguousName):
                    if config_key(flat, name) is not None:
                        out[name] = None
    return list(out)


def closest(name: str, known: Iterable[str], n: int = SUGGESTED) -> list[str]:
    """The names among ``known`` that ``name`` most likely meant: close spellings first, then names
    that share its last part (``eval_loss`` for ``eval/loss``, ``args.learning_rate`` for
    ``learning_rate``)."""
    known = list(dict.fromkeys(known))
    out = difflib.get_close_matches(name, known, n, 0.6)
    tail = re.split(r"[./_]", name)[-1].lower()
    if len(out) < n and tail:
        out += [k for k in known if re.split(r"[./_]", k)[-1].lower() == tail and k not in out]
    return out[:n]


def unknown(
    what: str,
    name: str,
    known: Iterable[str],
    other: Iterable[str] = (),
    tags: Iterable[str] = (),
    holder: str = "run",
) -> UnknownName:
    """``no run has metric 'eval/loss:best'; did you mean eval_loss:best?``: the error for a ``what``
    (metric, config key, column) called ``name`` that nothing holds, offering the closest of
    ``known`` (names of the same kind), then of ``other`` (of another kind: ``config.lr`` for a metric
    ``lr``), and quotes for a bare word that is a state or a tag (``state = failed``); ``holder``
    is what should have had it (a run, a table of samples). A metric's
    aggregate (``:best``) and a config key's ``config.`` are kept out of the likeness and put back."""
    prefix = "config." if name.startswith("config.") else ""
    base = name[len(prefix) :]
    suffix = ""
    if what == "metric":
        with contextlib.suppress(ValueError):  # a colon that names no aggregate is part of the key
            base, agg = aggregates.parse_spec(base)
            suffix = f":{agg}" if agg else ""
    known = [k[len(prefix) :] if prefix and k.startswith(prefix) else k for k in known]
    close = [f"{prefix}{k}{suffix}" for k in closest(base, known)]
    close += [k for k in _closest_of(base, other) if k not in close]
    if base in STATES or base in set(tags):
        close.insert(0, f'"{base}" (in quotes: a word, not a name)')
    if close:
        hint = f"; did you mean {' or '.join(close[:SUGGESTED])}?"
    elif known:
        shown = sorted(known)
        more = ", ..." if len(shown) > 8 else ""
        hint = f" (there are {', '.join(prefix + k for k in shown[:8])}{more})"
    else:
        hint = ""
    return UnknownName(f"no {holder} has {what} {name!r}{hint}")


def _closest_of(base: str, names: Iterable[str]) -> list[str]:
    """The closest of ``names``, which may carry a ``config.`` prefix, to the bare ``base``."""
    bare = {n.removeprefix("config."): n for n in names}
    return [bare[k] for k in closest(base, bare)]
