"""The embedded run store: on-disk layout, record framing, and the local-store backend."""
