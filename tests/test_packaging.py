"""What `pip install tunetrack` and `import tunetrack` cost a user."""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from pathlib import Path

from helpers import run_script

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
]


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


def test_console_script_is_declared():
    scripts = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts.get("tunetrack") == "tunetrack.cli:main"


def test_core_dependencies_are_only_what_the_core_needs():
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    names = sorted(d.split(">")[0].split("=")[0].split("<")[0] for d in project["dependencies"])
    assert names == ["click", "msgpack", "numpy", "nvidia-ml-py", "plotext", "psutil", "rich"]
    assert not any(fw in " ".join(project["dependencies"]) for fw in ("torch", "transformers", "accelerate"))
