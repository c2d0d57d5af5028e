"""Build hook: put Plotly's official basic bundle (from the npm registry) into the package.

The dashboard draws only line charts. Plotly's full bundle, which the ``plotly`` Python package
ships, is 4.8 MB that a browser compiles for 1.5-2 s before a chart page can draw anything; the
basic bundle (scatter, bar and pie on the same core, 1.2 MB) compiles in about a quarter of that.
It is fetched with the ordinary npm client at build time and never committed. Without npm (or
offline) the build goes on without it, and the dashboard serves the ``plotly`` package's full bundle.
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

PACKAGE = "plotly.js-basic-dist-min"
VERSION = "4.1.1"  # pinned: a new release is a deliberate change (the plotly package ships 4.1.1 too)
BUNDLE = "plotly-basic.min.js"
TARGET = Path("src/tunetrack/ui/static/vendor") / BUNDLE


class PlotlyBasicBundle(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        target = Path(self.root) / TARGET
        if not target.exists():
            try:
                _fetch(target)
            except (OSError, subprocess.SubprocessError, tarfile.TarError, KeyError) as exc:
                self.app.display_warning(
                    f"tunetrack: could not fetch {PACKAGE}@{VERSION} with npm ({exc}); the dashboard "
                    "will serve the plotly package's full bundle"
                )
                return
        if version != "editable":  # an editable install serves it from the source tree
            build_data["force_include"][str(target)] = f"tunetrack/ui/static/vendor/{BUNDLE}"


def _fetch(target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "pack", f"{PACKAGE}@{VERSION}", "--pack-destination", tmp, "--silent"],
            check=True,
            capture_output=True,
            timeout=300,
        )
        (tarball,) = Path(tmp).glob("*.tgz")
        with tarfile.open(tarball) as tar:
            source = tar.extractfile(f"package/{BUNDLE}")
            if source is None:
                raise KeyError(BUNDLE)
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{BUNDLE}.{os.getpid()}.tmp")
            with source, open(partial, "wb") as out:
                shutil.copyfileobj(source, out)
            os.replace(partial, target)  # concurrent builds each see a whole file or none
