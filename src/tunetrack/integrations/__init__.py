"""Framework adapters, one module per framework; each imports its framework only when imported."""
