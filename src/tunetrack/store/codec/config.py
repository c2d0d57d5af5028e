"""``CONFIG`` (``"c"``): ``t``, the unix time, and ``config``, the captured config merged into the run's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .kinds import CONFIG, KIND, TIMES

# -- fields of a config record (and ``k``, ``t``) --
CONFIG_DATA = "config"


def encode_config(unix_time: float, config: dict[str, Any]) -> dict[str, Any]:
    """A ``CONFIG`` record: ``config`` (captured, JSON-safe) merged into the run's at ``unix_time``."""
    return {KIND: CONFIG, TIMES: unix_time, CONFIG_DATA: config}


@dataclass
class ConfigRecord:
    time: float
    config: dict[str, Any]


def decode(rec: dict[str, Any]) -> ConfigRecord:
    """The ``ConfigRecord`` of an unpacked config record."""
    return ConfigRecord(rec[TIMES], rec[CONFIG_DATA])
