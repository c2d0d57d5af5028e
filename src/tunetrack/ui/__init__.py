"""The local dashboard (``tunetrack ui``): a FastAPI app over the read API, Plotly charts in the browser."""
