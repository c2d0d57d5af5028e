"""End-to-end tests in the modern Hugging Face environment: real training on CPU, no mocks.

Every test in this folder is marked ``e2e``; ``examples/`` is importable (``from _tiny import ...``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from support.servers import _mlflow_session_server  # noqa: F401 - a real mlflow server, for the MLflow backend

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
