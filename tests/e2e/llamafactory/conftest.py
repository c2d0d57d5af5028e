"""End-to-end tests with LLaMA Factory 0.9.5 in its own environment: real `run_exp` on CPU."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "examples"))


@pytest.fixture(scope="session")
def assets(tmp_path_factory):
    """A tiny Llama and its tokenizer saved together, and an alpaca + a preference dataset."""
    from _tiny import build_model, build_tokenizer

    base = tmp_path_factory.mktemp("lf")
    model_dir, data_dir = base / "model", base / "data"
    tok = build_tokenizer()
    tok.save_pretrained(model_dir)
    build_model(tok).save_pretrained(model_dir)
    data_dir.mkdir()
    words = ["red", "green", "blue", "four", "fox", "dog", "two", "lazy"]
    (data_dir / "tiny.json").write_text(
        json.dumps([{"instruction": f"say {w}", "input": "", "output": f"{w} {w}"} for w in words] * 4)
    )
    (data_dir / "pairs.json").write_text(
        json.dumps(
            [
                {"instruction": f"say {w}", "input": "", "chosen": f"{w}", "rejected": "the lazy dog"}
                for w in words
            ]
            * 4
        )
    )
    (data_dir / "dataset_info.json").write_text(
        json.dumps(
            {
                "tiny": {"file_name": "tiny.json"},
                "pairs": {
                    "file_name": "pairs.json",
                    "ranking": True,
                    "columns": {
                        "prompt": "instruction",
                        "query": "input",
                        "chosen": "chosen",
                        "rejected": "rejected",
                    },
                },
            }
        )
    )
    return {"model": model_dir, "data": data_dir}
