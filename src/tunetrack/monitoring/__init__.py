"""Watching a run's health and telling people: NaN/Inf and spikes found on the writer thread
(``health``), and alerts sent to Slack, Discord or any webhook from a thread of their own (``alerts``)."""
