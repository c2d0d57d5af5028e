"""tunetrack's own settings, read from the environment in one place.

``TUNETRACK_DIR`` (where the run store is), ``TUNETRACK_SYSTEM`` and ``TUNETRACK_SYSTEM_INTERVAL``
(system metrics), ``TUNETRACK_CONSOLE`` and ``TUNETRACK_CONSOLE_MAX`` (the console), ``TUNETRACK_STALE_AFTER`` (when a silent run counts as crashed). An argument given
in code always wins over the environment; a malformed value falls back to the default.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

#: The store's folder when neither an argument nor ``$TUNETRACK_DIR`` names one (in the working dir).
DEFAULT_DIRNAME = "tunetrack_runs"


def store_dir(
    dir: str | os.PathLike[str] | None = None, default: str | os.PathLike[str] | None = None
) -> str | Path:
    """The run store: ``dir``, else ``$TUNETRACK_DIR``, else ``default`` (an adapter's own output
    folder, such as torchtune's ``log_dir``), else ``./tunetrack_runs``. A folder comes back as a
    ``Path``; an object-store URL (``s3://bucket/prefix``, ``gs://...``) as the string it is."""
    chosen = dir if dir is not None else os.environ.get("TUNETRACK_DIR") or default
    if not chosen:
        return Path.cwd() / DEFAULT_DIRNAME
    text = os.fspath(chosen)
    if "://" in text and text.split("://", 1)[0].isidentifier():
        return text.rstrip("/")
    return Path(text).expanduser()


def _float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def system_enabled(flag: bool | None = None) -> bool:
    """System metrics are on unless ``flag`` is False or ``TUNETRACK_SYSTEM=0``."""
    return flag if flag is not None else os.environ.get("TUNETRACK_SYSTEM", "1") != "0"


def system_interval(interval: float | None = None) -> float:
    """Seconds between two system-metric samples: ``interval``, else the environment, else 10."""
    return interval or _float("TUNETRACK_SYSTEM_INTERVAL", 10.0)


def console(flag: bool | str | None = None) -> str | None:
    """What of the console is recorded: ``"all"`` (fds 1 and 2, the default), ``"stderr"`` (fd 2
    only) or None (nothing). ``flag`` (``True``, ``False``, ``"stderr"``) wins over
    ``$TUNETRACK_CONSOLE`` (``1``, ``0``, ``stderr``)."""
    chosen = flag if flag is not None else os.environ.get("TUNETRACK_CONSOLE", "1").strip().lower()
    if chosen == "stderr":
        return "stderr"
    return None if chosen in (False, "0", "false", "no", "off") else "all"


def console_max() -> int:
    """Bytes of console output kept per process (``$TUNETRACK_CONSOLE_MAX``, else 100 MB): past it, the
    first and the last half are kept and the cut is marked."""
    return max(int(_float("TUNETRACK_CONSOLE_MAX", 100e6)), 1024)


def parquet_enabled() -> bool:
    """Whether a run's Parquet copy is written when its last process ends (``$TUNETRACK_PARQUET``,
    ``0`` to skip it; ``tunetrack parquet`` writes it later)."""
    return os.environ.get("TUNETRACK_PARQUET", "1") != "0"


def stale_after() -> float:
    """Seconds without a heartbeat after which a run without an end record reads ``crashed``."""
    return _float("TUNETRACK_STALE_AFTER", 60.0)


def _user_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "tunetrack"


def spool_dir() -> Path:
    """Where a run written to an object store is kept on local disk until it is uploaded
    (``$TUNETRACK_SPOOL``, else ``~/.cache/tunetrack/spool``)."""
    return Path(os.environ.get("TUNETRACK_SPOOL") or _user_cache() / "spool").expanduser()


def cache_dir() -> Path:
    """Where readers keep what they downloaded from object stores (``$TUNETRACK_CACHE``, else
    ``~/.cache/tunetrack/objects``)."""
    return Path(os.environ.get("TUNETRACK_CACHE") or _user_cache() / "objects").expanduser()


def upload_interval(interval: float | None = None) -> float:
    """Seconds between two uploads to an object store: ``interval``, else
    ``$TUNETRACK_UPLOAD_INTERVAL``, else 10. A lost machine loses at most this much."""
    return max(interval or _float("TUNETRACK_UPLOAD_INTERVAL", 10.0), 0.1)


def control_interval() -> float:
    """Seconds between two looks of a live run's process for a request to stop it
    (``$TUNETRACK_CONTROL_INTERVAL``, else 2): a folder's run reads its edit files, a bucket's lists
    its edits' index entries (one short LIST)."""
    return max(_float("TUNETRACK_CONTROL_INTERVAL", 2.0), 0.05)


def upload_timeout() -> float:
    """How long ``finish()`` waits for the last upload (``$TUNETRACK_UPLOAD_TIMEOUT``, else 30 s);
    what is left waits in the spool for ``tunetrack sync``."""
    return _float("TUNETRACK_UPLOAD_TIMEOUT", 30.0)


def backend_stall() -> float:
    """How long ``finish()`` waits for a backend that delivers nothing (``$TUNETRACK_BACKEND_STALL``,
    else 30 s): a backend that makes progress is waited for as long as it does."""
    return _float("TUNETRACK_BACKEND_STALL", 30.0)


def backends(names: object = None) -> object:
    """The backends to mirror runs into: the argument, else ``$TUNETRACK_BACKENDS`` (comma-separated
    names), else none."""
    return names if names is not None else os.environ.get("TUNETRACK_BACKENDS")


def alert_urls(urls: str | Sequence[str] | None = None) -> list[str]:
    """Where alerts go: ``urls`` (one or a list), else ``$TUNETRACK_ALERT_URL`` (comma-separated)."""
    chosen = urls if urls is not None else os.environ.get("TUNETRACK_ALERT_URL", "")
    items = chosen.split(",") if isinstance(chosen, str) else list(chosen)
    return [url.strip() for url in items if url and url.strip()]


def alert_timeout() -> float:
    """Seconds one webhook request may take (``$TUNETRACK_ALERT_TIMEOUT``, else 10); ``finish()``
    waits at most this long for its own alerts to go out."""
    return max(_float("TUNETRACK_ALERT_TIMEOUT", 10.0), 0.1)


def alert_interval() -> float:
    """Seconds before the same alert of the same run is sent again (``$TUNETRACK_ALERT_INTERVAL``,
    else 300): a NaN at every step sends one alert, not thousands."""
    return _float("TUNETRACK_ALERT_INTERVAL", 300.0)


def dashboard_url() -> str | None:
    """The dashboard's address (``$TUNETRACK_DASHBOARD_URL``), for links in alerts."""
    return os.environ.get("TUNETRACK_DASHBOARD_URL", "").rstrip("/") or None


def rules_file() -> str | None:
    """The rules file a ``Tracker`` given no ``rules=`` checks, and ``tunetrack watch`` given no
    ``--rules`` (``$TUNETRACK_RULES``): a child process inherits it, so one variable covers every rank
    and every run a launcher starts."""
    return os.environ.get("TUNETRACK_RULES") or None
