"""tests/bridges: the backends and importers against the real trackers (see tests/servers.py)."""

from servers import (  # noqa: F401 - the fixtures
    _mlflow_session_server,
    mlflow_server,
    shared_mlflow_server,
)
