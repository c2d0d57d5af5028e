"""What a ``Tracker`` was given, kept for ``start()`` (the constructor does nothing), and how it
becomes the run's writer (its backends, health monitor and intervals) and its system sampler."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import settings
from .._warnings import warn_once
from ..backends.base import Backend
from ..monitoring.alerts import Alerter
from ..monitoring.health import HealthConfig, HealthMonitor
from ..monitoring.rules import Rule, RuleChecker, tracker_rules
from ..writer import Writer
from .launch import RankInfo


@dataclass(frozen=True)
class Options:
    """The constructor's arguments that only ``start()`` uses."""

    dir: str | os.PathLike[str] | None
    config: Any
    id: str | None
    resume: str | None
    resume_step: int | None
    backends_given: Sequence[Backend | str] | str | None
    store: bool
    all_ranks: bool
    flush_interval: float
    fsync_interval: float
    max_pending: int
    system: bool | None
    system_interval: float | None
    system_sources: Sequence[Any] | None
    health: bool | HealthConfig
    upload_interval: float | None
    backend_timeout: float | None
    alerts: str | Sequence[str] | None
    console: bool | str | None
    strict: bool
    #: ``RUN@STEP``: the run and step this new run branches from (``writer.resolve_fork``)
    fork_from: str | None = None
    #: rules (``monitoring.rules``) or a rules file; None: ``$TUNETRACK_RULES``
    rules: Sequence[Rule] | str | os.PathLike[str] | None = None

    def backends(self) -> list[Backend]:
        """Backends given as instances or by name (``TUNETRACK_BACKENDS`` when none are given). A name
        nothing provides is warned about once and skipped: training goes on (``strict`` raises)."""
        from ..backends import registry

        specs = settings.backends(self.backends_given)
        out = []
        for spec in registry.names(specs) if isinstance(specs, str) else list(specs or []):  # type: ignore[call-overload]
            try:
                out.append(registry.resolve(spec))
            except Exception as exc:
                if self.strict:
                    raise
                warn_once(f"backend-name:{spec}", f"backend {spec!r} is not used: {exc}")
        return out

    def writer(self, alerter: Alerter | None, stop: Callable[[str], None] | None = None) -> Writer:
        """The run's writer, with its backends, health monitor (off with ``health=False``) and rules.
        The rules are checked where ``stop`` (how a rule asks the run to stop) is given: the process
        that records the run's rows."""
        health = (
            None if self.health is False else HealthMonitor(self.health if self.health is not True else None)
        )
        rules = tracker_rules(self.rules, self.strict) if stop is not None else []
        return Writer(
            self.backends(),
            flush_interval=self.flush_interval,
            fsync_interval=self.fsync_interval,
            health=health,
            max_pending=self.max_pending,
            strict=self.strict,
            backend_timeout=self.backend_timeout,
            alerter=alerter,
            rules=RuleChecker(rules) if rules else None,
            stop=stop,
        )

    def sampler(self, ranks: RankInfo, log_system: Callable[[float, dict[str, Any]], None]) -> Any:
        """System metrics: on by default, one sampler per node (local rank 0), off the training thread;
        None where they are off (the sampler is not started)."""
        if not settings.system_enabled(self.system) or ranks.local_rank != 0:
            return None
        from ..system import SystemSampler, default_sources

        sources = list(self.system_sources) if self.system_sources is not None else default_sources()
        return SystemSampler(sources, settings.system_interval(self.system_interval), log_system)
