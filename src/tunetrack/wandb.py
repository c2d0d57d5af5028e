"""W&B's Python API, recording tunetrack runs: ``import tunetrack.wandb as wandb`` in a script written
for W&B, and nothing else changes (``tunetrack.integrations.wandb_api`` says what is supported).

This module is that one: importing it puts the implementation in its place, so ``wandb.run`` and
``wandb.config`` are the live values W&B's own module gives."""

import sys

from .integrations import wandb_api

sys.modules[__name__] = wandb_api
