"""tests/bridges: the backends and importers against the real trackers (see tests/support/servers.py)."""

from support.servers import (  # noqa: F401 - the fixtures
    _mlflow_session_server,
    mlflow_server,
    shared_mlflow_server,
)
