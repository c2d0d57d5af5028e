"""Families of keys: the keys that differ only in their numbers (``moe/layer3/expert7/load`` and its
10,239 siblings are of ``moe/layer*/expert*/load``), and a run's summary with a row per family instead
of one per key past ``SUMMARY_SHOWN`` keys (``tunetrack show``, the run page, the report: worded by
``as_text.folded_summary``): a mixture-of-experts run's summary is two rows, not 10,000."""

from __future__ import annotations

import re
from typing import Any

from ..values import is_number


def family(key: str) -> str:
    """The glob a key shares with its siblings: its numbers as ``*`` (``moe/layer3/expert7/load`` is of
    ``moe/layer*/expert*/load``, ``layers.11.mlp/grad_norm`` of ``layers.*.mlp/grad_norm``)."""
    return re.sub(r"\d+", "*", key)


def families(keys: list[str], least: int = 4) -> dict[str, list[str]]:
    """The families of at least ``least`` keys among ``keys`` (``family``), in the order their first key
    comes; each family's keys in that order too. A key with no siblings belongs to none."""
    found: dict[str, list[str]] = {}
    for key in keys:
        found.setdefault(family(key), []).append(key)
    return {name: members for name, members in found.items() if len(members) >= least and name != members[0]}


def searched(glob: str, members: list[str], search: re.Pattern[str]) -> list[str]:
    """The keys of a family a search over the keys shows (the run page's regular expression): those it
    matches, or every one where it matches the family's glob as written (``expert\\*``)."""
    if search.search(glob):
        return members
    return [key for key in members if search.search(key)]


def folded(
    keys: list[str], summary: dict[str, dict[str, Any]]
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """``keys`` with their families (``families``) folded, as the run page is first sent them: the
    keys of no family, and per family's glob how many keys, its first and last, its summary
    (``family_summary``) and ``at``, how many of the other keys come before its first. At 10,240
    keys: a few hundred bytes instead of 2 MB of names and summaries, which the page asks for only
    where it needs them (``reader.across``, the search)."""
    groups = families(keys)
    member = {key for members in groups.values() for key in members}
    loose = [key for key in keys if key not in member]
    firsts = {members[0]: glob for glob, members in groups.items()}
    seen, at = 0, {}
    for key in keys:
        if key in firsts:
            at[firsts[key]] = seen
        seen += key not in member
    return loose, {
        glob: {
            "keys": len(members),
            "first": members[0],
            "last": members[-1],
            "at": at[glob],
            "summary": family_summary([summary[k] for k in members if k in summary]),
        }
        for glob, members in groups.items()
    }


#: past this many keys, a summary folds the families of keys (``families``): ``tunetrack
#: show`` (``--full``: each key), the dashboard's run page and the report
SUMMARY_SHOWN = 40


def fold(summary: dict[str, Any], most: int = SUMMARY_SHOWN) -> list[tuple[str, list[str]]]:
    """The summary's rows, each a name and its keys: a key alone (``("loss", ["loss"])``), or past
    ``most`` keys a family where its first key came (``("moe/layer*/expert*/load", [10,000 keys])``)."""
    groups = families(list(summary)) if len(summary) > most else {}
    first = {members[0]: name for name, members in groups.items()}
    folded = {key for members in groups.values() for key in members}
    return [
        (first[key], groups[first[key]]) if key in first else (key, [key])
        for key in summary
        if key not in folded or key in first
    ]


def family_summary(members: list[dict[str, Any]]) -> dict[str, float | None]:
    """A family's summary from its keys' (``Run.summary``'s): the median of their last values, the least
    minimum, the most maximum, the last step."""
    import numpy as np

    def values(field: str) -> list[float]:
        return [float(m[field]) for m in members if is_number(m.get(field))]

    lasts, mins, maxes, steps = values("last"), values("min"), values("max"), values("step")
    return {
        "median": float(np.median(lasts)) if lasts else None,
        "min": min(mins) if mins else None,
        "max": max(maxes) if maxes else None,
        "step": int(max(steps)) if steps else None,
    }
