"""``python -m tunetrack``: the same as the ``tunetrack`` command."""

from .cli import main

if __name__ == "__main__":
    main()
