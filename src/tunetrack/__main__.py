"""``python -m tunetrack``: the same as the ``tunetrack`` command."""

from .cli import main

main()
