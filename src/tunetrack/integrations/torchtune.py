"""torchtune through its ``MetricLoggerInterface``, chosen by dotted path on ``tune run``::

    tune run lora_finetune_single_device --config my.yaml \\
        metric_logger._component_=tunetrack.integrations.torchtune.TunetrackLogger metric_logger.project=tt

The interface is a Protocol, so this module imports neither torchtune nor torch: it fits by shape.
Every shipped config sets ``metric_logger.log_dir``; it is accepted, and used as the store root
when neither ``dir=`` nor ``$TUNETRACK_DIR`` says otherwise (so the runs land next to the recipe's
other outputs). A recipe that crashes never calls ``close()``: the core's exception hook and
heartbeat still end the run ``failed`` or ``crashed``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from .._warnings import warn_once
from ..derived import Throughput
from ..tracker import Tracker


class TunetrackLogger:
    """A torchtune metric logger that records into tunetrack."""

    def __init__(
        self,
        project: str | None = None,
        name: str | None = None,
        log_dir: str | None = None,
        dir: str | None = None,
        tags: list[str] | str | None = None,
        **kwargs: Any,
    ) -> None:
        root = dir or os.environ.get("TUNETRACK_DIR") or log_dir
        if isinstance(tags, str):
            tags = [t for t in tags.split(",") if t]
        known = {
            k: kwargs.pop(k)
            for k in ("system", "system_interval", "flush_interval", "strict", "all_ranks")
            if k in kwargs
        }
        if kwargs:
            warn_once("torchtune:kwargs", f"TunetrackLogger ignored unknown arguments: {sorted(kwargs)}")
        self.tracker = Tracker(project=project, name=name, dir=root, tags=list(tags or []), **known)
        self._throughput = Throughput()

    def log(self, name: str, data: Any, step: int) -> None:
        self.log_dict({name: data}, step)

    def log_dict(self, payload: Mapping[str, Any], step: int) -> None:
        row = dict(payload)
        row.update(self._throughput.update(step, time.time(), payload))
        self.tracker.log(row, step=step)

    def log_config(self, config: Any) -> None:
        """The resolved config, plus the original YAML text under ``_yaml`` (interpolations intact)."""
        self.tracker.log_config(config)
        try:
            from omegaconf import OmegaConf

            self.tracker.log_config({"_yaml": OmegaConf.to_yaml(config)})
        except Exception as exc:  # not an OmegaConf object: the captured config is all there is
            warn_once("torchtune:yaml", f"could not keep the config's YAML text: {exc!r}")

    def close(self) -> None:
        self.tracker.finish()
