"""Bridges between tunetrack and the other trackers, outside a running training job.

``replay`` sends a recorded run into a backend (``tunetrack sync-backend``): what a live backend missed,
or a run recorded offline. ``importers`` bring runs recorded by another tracker into a tunetrack store
(``tunetrack import``). Both read or write whole runs, so they sit above the reader and the writer and
below the CLI; nothing here runs on a training thread.
"""
