"""End-to-end tests with torchtune 0.6.1 recipes run by `tune run`, on CPU (the `torchtune` nox session)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from support.servers import mlflow_server  # noqa: F401 - the fixture (a real mlflow server)

HERE = Path(__file__).resolve().parent
PREPARE = HERE.parents[2] / "examples" / "torchtune" / "prepare.py"


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> dict[str, Path]:
    """``{"tiny_full": yaml, "tiny_lora": yaml}`` over a local tokenizer, checkpoint and data set."""
    spec = importlib.util.spec_from_file_location("tunetrack_example_torchtune_prepare", PREPARE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.prepare(tmp_path_factory.mktemp("torchtune"))


@pytest.fixture(scope="session")
def broken_data(tiny) -> Path:
    """The example's records with a null ``output`` at index 12.

    With ``shuffle=False`` and a batch of 4 the recipe trains steps 1-3, then the data loader raises
    (``Message`` refuses ``None`` content) while building the fourth batch: a mid-training failure.
    """
    art = tiny["tiny_full"].parent / "art"
    records = json.loads((art / "data.json").read_text())
    records[12] = {**records[12], "output": None}
    path = art / "broken.json"
    path.write_text(json.dumps(records))
    return path
