"""tests/bridges: the backends and importers against the real trackers (see tests/servers.py)."""

from servers import mlflow_server  # noqa: F401 - the fixture
