"""Build hook: put uPlot (from the npm registry) into the package, for the dashboard's charts.

uPlot draws line charts on a canvas and is built for long time series: 50 kB of JavaScript that a
browser compiles in milliseconds (Plotly's smallest bundle, 1.2 MB, took about 0.3 s before a chart
page could draw anything). It is fetched with the ordinary npm client at build time and never
committed. Without npm (or offline) the build goes on with a warning, and the dashboard's chart pages
say that the charting library was not built in instead of drawing charts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = "uplot"
VERSION = "1.6.32"  # pinned: a new release is a deliberate change
VENDOR = Path("src/tunetrack/ui/static/vendor")
#: file in the npm package -> file in the dashboard's vendor folder (the licence travels with the code)
FILES = {
    "package/dist/uPlot.iife.min.js": "uPlot.iife.min.js",
    "package/dist/uPlot.min.css": "uPlot.min.css",
    "package/LICENSE": "uPlot.LICENSE",
}


class UPlotBundle(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        vendor = Path(self.root) / VENDOR
        if not all((vendor / name).is_file() for name in FILES.values()):
            try:
                _fetch(vendor)
            except (OSError, subprocess.SubprocessError, tarfile.TarError, KeyError) as exc:
                self.app.display_warning(
                    f"tunetrack: could not fetch {PACKAGE}@{VERSION} with npm ({exc}); the dashboard will "
                    "show no charts (the charting library was not built in: rebuild with npm available)"
                )
                return
        if version != "editable":  # an editable install serves them from the source tree
            for name in FILES.values():
                build_data["force_include"][str(vendor / name)] = f"tunetrack/ui/static/vendor/{name}"


def _fetch(vendor: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "pack", f"{PACKAGE}@{VERSION}", "--pack-destination", tmp, "--silent"],
            check=True,
            capture_output=True,
            timeout=300,
        )
        (tarball,) = Path(tmp).glob("*.tgz")
        vendor.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as tar:
            for member, name in FILES.items():
                source = tar.extractfile(member)
                if source is None:
                    raise KeyError(member)
                partial = vendor / f".{name}.{os.getpid()}.tmp"
                with source, open(partial, "wb") as out:
                    shutil.copyfileobj(source, out)
                os.replace(partial, vendor / name)  # concurrent builds each see a whole file or none
