"""A run's config (its hyperparameters): captured from whatever object a script hands over, and
handled as a tree (merged, flattened, compared). tunetrack's own settings are ``tunetrack.settings``."""

from .capture import capture
from .tree import MISSING, diff, flatten, merge, number, same, setting, text

__all__ = ["MISSING", "capture", "diff", "flatten", "merge", "number", "same", "setting", "text"]
