"""Read runs back: ``list_runs`` and ``open_run`` return ``Run`` objects (metadata, state, config,
summary, events, metric series). Used by the CLI, the dashboard and users' notebooks."""

from .run import STATES, Run, Series, list_runs, open_run

__all__ = ["STATES", "Run", "Series", "list_runs", "open_run"]
