"""The local dashboard (``tunetrack ui``): a FastAPI app over the read API, uPlot charts in the browser."""
