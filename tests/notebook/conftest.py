"""Notebook tests: the example notebook executed by a real kernel (nbclient), and rendered in
JupyterLab in Debian's Chromium driven by Playwright (the ``notebook`` nox session)."""

from __future__ import annotations

from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notebook" / "live_panel.ipynb"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "notebook"
