"""End-to-end tests of the lm-evaluation-harness integration: a real tiny Trainer run on CPU saves
full-model checkpoints, and lm-eval evaluates them on a task built from local data. No hub, no mocks.

Every test in this folder is marked ``e2e``; ``examples/`` is importable (``from _tiny import ...``).
"""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
sys.path.insert(0, str(EXAMPLES))
