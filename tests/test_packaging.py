"""What `pip install tunetrack` and `import tunetrack` cost a user."""

from __future__ import annotations

import email.parser
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from support.helpers import run_script

ROOT = Path(__file__).resolve().parents[1]

#: never imported by `import tunetrack` or by starting a run
HEAVY = [
    "torch",
    "transformers",
    "accelerate",
    "trl",
    "torchtune",
    "peft",
    "datasets",
    "numpy",
    "pandas",
    "omegaconf",
    "llamafactory",
    "deepspeed",
    "comet_ml",
    "duckdb",
    "mcp",
    "pyarrow",
    "lark",
    "pyiceberg",
    "sqlalchemy",
]

#: the wheel's unconditional requirements: the tracker, the store, the read API and the CLI
CORE = {"click", "lark", "msgpack", "numpy", "nvidia-ml-py", "plotext", "psutil", "rich"}


def test_import_pulls_in_no_framework():
    out = run_script(f"""
        import json, sys
        import tunetrack
        from tunetrack import Tracker, ConsoleBackend
        print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
    """)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_starting_a_run_pulls_in_no_framework(tmp_path):
    out = run_script(
        f"""
        import json, sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1]).start()
        t.log({{"loss": 1.0}})
        t.finish()
        print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
    """,
        str(tmp_path),
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_console_script_is_installed():
    scripts = {ep.name: ep for ep in importlib.metadata.entry_points(group="console_scripts")}
    assert "tunetrack" in scripts, "the tunetrack console script is not installed"
    assert scripts["tunetrack"].value == "tunetrack.cli:main"
    assert callable(scripts["tunetrack"].load())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The real wheel, built from this checkout as `pip install .` would build it."""
    out = tmp_path_factory.mktemp("wheel")
    proc = _build_wheel(ROOT, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("tunetrack-*.whl")
    return built


def _build_wheel(
    source: Path, out: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # The tests session installs hatchling; elsewhere pip fetches it into an isolated build env.
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", *isolation, "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_a_build_without_npm_succeeds_with_a_warning_and_no_charting_library(tmp_path):
    """hatch_build.py fetches uPlot with npm: without npm the wheel still builds, says why it has no
    charts, and ships the dashboard without uPlot (its pages then say it was not built in)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "hatch_build.py", "README.md"):
        shutil.copy(ROOT / name, source)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("vendor", "__pycache__"))
    proc = _build_wheel(source, tmp_path, env={**os.environ, "PATH": str(tmp_path / "no-npm-here")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "could not fetch uplot@1.6.32 with npm" in proc.stdout + proc.stderr
    assert "rebuild with npm available" in proc.stdout + proc.stderr
    (built,) = tmp_path.glob("tunetrack-*.whl")
    with zipfile.ZipFile(built) as zf:
        names = zf.namelist()
    assert "tunetrack/ui/static/run.js" in names
    assert "tunetrack/ui/static/panel.js" in names  # the notebook panel's front end
    assert not [n for n in names if "/vendor/" in n]


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(zf.read(name).decode())


def test_wheel_requires_only_the_core(wheel):
    meta = _metadata(wheel)
    requires = meta.get_all("Requires-Dist") or []
    unconditional = {
        re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0].lower() for r in requires if "extra ==" not in r
    }
    assert unconditional == CORE
    assert meta["Requires-Python"] == ">=3.11"
    # every framework is an extra, never a requirement
    for framework in ("torch", "transformers", "accelerate", "trl", "torchtune", "pandas", "omegaconf"):
        assert framework not in unconditional


def test_wheel_ships_the_package_and_nothing_else(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert "tunetrack/__init__.py" in names
    assert "tunetrack/cli/__init__.py" in names
    assert any(n.startswith("tunetrack/ui/static/") for n in names)  # the dashboard's assets
    for vendor in (
        "uPlot.iife.min.js",
        "uPlot.min.css",
        "uPlot.LICENSE",
    ):  # fetched from npm by hatch_build.py
        assert f"tunetrack/ui/static/vendor/{vendor}" in names
    top = {n.split("/")[0] for n in names}
    # no tests, benchmarks, examples; beside the package, the import hook a Python start loads
    assert {t for t in top if not t.endswith(".dist-info")} == {
        "tunetrack",
        "_tunetrack_hooks.py",
        "tunetrack-hooks.pth",
    }
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("tunetrack-hooks.pth").decode().strip() == "import _tunetrack_hooks"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as zf:
        assert "tunetrack = tunetrack.cli:main" in zf.read(entry_points).decode()


def test_a_python_start_loads_the_hook_and_nothing_else_of_tunetrack():
    """Every Python start in an environment with tunetrack loads ``_tunetrack_hooks`` (the .pth file)
    and nothing else: not the package, not ``typing``. ``TUNETRACK_HOOKS=0`` turns it off."""
    code = "import sys; print(sorted(m for m in sys.modules if 'tunetrack' in m or m == 'typing'))"
    started = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert started.stdout.strip() == "['_tunetrack_hooks']"
    off = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; print(any(type(f).__name__ == 'AfterImport' for f in sys.meta_path))",
        ],
        env={**os.environ, "TUNETRACK_HOOKS": "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert off.stdout.strip() == "False"
