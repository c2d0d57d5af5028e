"""Config capture: every kind of config a fine-tuning script has, and redaction."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tunetrack.config import REDACTED, capture, flatten, is_secret_key, merge


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Inner:
    rank: int = 8
    modules: set = dataclasses.field(default_factory=lambda: {"v_proj", "q_proj"})


@dataclasses.dataclass
class Outer:
    lr: float = 1e-4
    inner: Inner = dataclasses.field(default_factory=Inner)
    path: Path = Path("/data/x")
    color: Color = Color.RED


def test_plain_types():
    assert capture(Outer()) == {
        "lr": 1e-4,
        "inner": {"rank": 8, "modules": ["q_proj", "v_proj"]},
        "path": "/data/x",
        "color": "red",
    }
    assert capture(argparse.Namespace(a=1, b=(1, 2))) == {"a": 1, "b": [1, 2]}
    assert capture({"dtype": torch.float16, "device": torch.device("cpu")}) == {
        "dtype": "torch.float16",
        "device": "cpu",
    }
    assert capture({"n": np.int64(3), "f": np.float32(0.5), "a": np.arange(3)}) == {
        "n": 3,
        "f": 0.5,
        "a": [0, 1, 2],
    }
    assert capture(5) == {"value": 5}
    assert capture({1: "a", (2, 3): "b"}) == {"1": "a", "[2, 3]": "b"}


def test_pydantic_and_omegaconf():
    import pydantic
    from omegaconf import OmegaConf

    class M(pydantic.BaseModel):
        lr: float = 0.1
        name: str = "x"

    assert capture(M()) == {"lr": 0.1, "name": "x"}
    cfg = OmegaConf.create({"out": "/o", "log": "${out}/logs", "bad": "${missing.key}", "sub": {"x": [1, 2]}})
    assert capture(cfg) == {"out": "/o", "log": "/o/logs", "bad": "${missing.key}", "sub": {"x": [1, 2]}}


def test_hugging_face_and_peft_configs(tmp_path):
    from peft import LoraConfig
    from transformers import LlamaConfig, TrainingArguments

    args = capture(TrainingArguments(output_dir=str(tmp_path), report_to="none", hub_token="hf_secret"))
    assert args["learning_rate"] == 5e-5 and args["output_dir"] == str(tmp_path)
    assert "hf_secret" not in json.dumps(args)
    model = capture(LlamaConfig(hidden_size=64, num_hidden_layers=2, vocab_size=100))
    assert model["hidden_size"] == 64 and model["vocab_size"] == 100
    lora = capture(LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    assert lora["r"] == 4 and sorted(lora["target_modules"]) == ["q_proj", "v_proj"]


def test_hostile_objects_are_captured_without_raising():
    cyclic: dict = {"a": 1}
    cyclic["self"] = cyclic

    class BadRepr:
        def __repr__(self):
            raise RuntimeError("no")

    out = capture(
        {
            "cyc": cyclic,
            "big": "x" * 1_000_000,
            "long": list(range(1_000_000)),
            "bad": BadRepr(),
            "fn": capture,
            "cls": Path,
            "nan": math.nan,
        }
    )
    assert out["cyc"] == {"a": 1, "self": "<cycle>"}
    assert len(out["big"]) < 10_100 and out["big"].endswith("more chars>")
    assert len(out["long"]) == 1001 and out["long"][-1] == "<999000 more items>"
    assert out["bad"] == "<unrepresentable BadRepr>"
    assert out["fn"] == "tunetrack.config.capture" and out["cls"] == "pathlib.Path"
    json.dumps(out, allow_nan=True)


@pytest.mark.parametrize(
    "key",
    [
        "hub_token",
        "HF_TOKEN",
        "push_to_hub_token",
        "wandb_api_key",
        "db_password",
        "aws_secret_access_key",
        "api_key",
        "private_key",
        "auth_header",
        "passwd",
    ],
)
def test_secret_keys(key):
    assert is_secret_key(key)
    assert capture({key: "s3cr3t"}) == {key: REDACTED}


@pytest.mark.parametrize(
    "key",
    [
        "max_tokens",
        "num_tokens",
        "tokenizer",
        "tokenizer_name",
        "pad_token_id",
        "eos_token_id",
        "tokens_per_second",
        "author",
        "max_new_tokens",
        "special_tokens",
        "num_input_tokens_seen",
        "learning_rate",
    ],
)
def test_not_secret_keys(key):
    assert not is_secret_key(key)
    assert capture({key: "v"}) == {key: "v"}


def test_flatten_and_merge():
    assert flatten({"a": {"b": 1, "c": {"d": [1]}}, "e": {}}) == {"a.b": 1, "a.c.d": [1], "e": {}}
    assert merge({"a": {"b": 1, "c": 2}, "x": 1}, {"a": {"c": 3}, "y": 2}) == {
        "a": {"b": 1, "c": 3},
        "x": 1,
        "y": 2,
    }


anything = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.binary()),
    lambda c: st.one_of(
        st.lists(c),
        st.tuples(c, c),
        st.frozensets(st.integers()),
        st.dictionaries(st.one_of(st.text(), st.integers()), c),
    ),
    max_leaves=20,
)


@given(anything)
def test_capture_never_raises_and_is_json(value):
    json.dumps(capture(value), allow_nan=True)
