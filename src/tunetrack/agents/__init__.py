"""tunetrack for AI agents: ``mcp`` serves a store over the Model Context Protocol (``tunetrack mcp``).
The SDK is imported only when a server is made (``pip install 'tunetrack[mcp]'``)."""

from .mcp_server import Tools, serve, server

__all__ = ["Tools", "serve", "server"]
