"""The terminal view (``tunetrack tui``): runs, their charts and consoles in a terminal, over SSH,
with no browser and no port. ``model`` reads the store (the read API, incrementally); ``app`` draws
it with Textual."""
