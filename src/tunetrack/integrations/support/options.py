"""tunetrack's own options for a run started by a framework's command line, not by Python code.

A drop-in entry point (``python -m tunetrack.integrations.llamafactory train ...``) takes them as
``tunetrack.KEY=VALUE`` arguments beside the framework's own, and removes them before the framework
parses its arguments. A callback that the framework builds itself from a name (ms-swift's
``--callbacks tunetrack``) has no arguments of its own: it reads them from ``TUNETRACK_<KEY>``
environment variables, which also carry them from a drop-in entry point to the processes a launcher
starts (ms-swift runs every training in a child process, under torchrun on several GPUs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

#: the options, each also ``TUNETRACK_<KEY>`` in the environment (``dir`` and ``backends`` are read
#: by the tracker itself from ``TUNETRACK_DIR`` and ``TUNETRACK_BACKENDS`` too)
OPTIONS = ("project", "name", "dir", "tags", "backends")
#: options that hold a comma-separated list
LISTS = ("tags", "backends")
PREFIX = "tunetrack."


def _value(name: str, text: str) -> Any:
    return [t for t in text.split(",") if t] if name in LISTS else text


def split_options(argv: Sequence[str]) -> tuple[list[str], dict[str, Any]]:
    """Separate ``tunetrack.KEY=VALUE`` arguments (ours) from the framework's. An unknown
    ``tunetrack.`` key is a setup mistake: it stops before training starts, naming the known ones."""
    rest, options = [], {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key.startswith(PREFIX) and key[len(PREFIX) :] in OPTIONS:
            name = key[len(PREFIX) :]
            options[name] = _value(name, value)
        elif key.startswith(PREFIX):
            raise SystemExit(f"unknown option {key!r}; tunetrack options are {', '.join(OPTIONS)}")
        else:
            rest.append(arg)
    return rest, options


def from_environment(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The options set as ``TUNETRACK_<KEY>`` variables (empty ones count as unset)."""
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for name in OPTIONS:
        text = env.get(f"TUNETRACK_{name.upper()}", "")
        if text:
            out[name] = _value(name, text)
    return out


def to_environment(options: Mapping[str, Any], env: MutableMapping[str, str] | None = None) -> None:
    """Set ``options`` as ``TUNETRACK_<KEY>`` variables, for the processes started after this."""
    env = os.environ if env is None else env
    for name, value in options.items():
        env[f"TUNETRACK_{name.upper()}"] = ",".join(value) if name in LISTS else str(value)
