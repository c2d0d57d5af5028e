"""Config capture: every kind of config a fine-tuning script has, hostile objects, and redaction.

Every captured value is checked with ``assert_json_safe``: only dict/list/str/int/float/bool/None
(exact types, str keys) and ``json.dumps(allow_nan=True)`` succeeds.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import enum
import json
import math
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tunetrack.config import MISSING, capture, diff, flatten, merge, same
from tunetrack.config.capture import MAX_DEPTH
from tunetrack.redact import REDACTED, is_secret_key


def assert_json_safe(value):
    if isinstance(value, dict):
        for key, item in value.items():
            assert type(key) is str
            assert_json_safe(item)
    elif isinstance(value, list):
        for item in value:
            assert_json_safe(item)
    else:
        assert value is None or type(value) in (str, int, float, bool), type(value)


def cap(obj):
    """capture() plus the invariants every capture must hold."""
    out = capture(obj)
    assert type(out) is dict
    assert_json_safe(out)
    json.dumps(out, allow_nan=True)
    return out


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Count(int):
    pass


class Mode(enum.StrEnum):
    FAST = "fast"


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
    shape: tuple = (2, 3)


def test_top_level_non_mappings_are_wrapped():
    assert cap(5) == {"value": 5}
    assert cap(None) == {"value": None}
    assert cap("s") == {"value": "s"}
    assert cap([1, (2, 3)]) == {"value": [1, [2, 3]]}


def test_dataclass_with_nested_dataclass():
    assert cap(Outer()) == {
        "lr": 1e-4,
        "inner": {"rank": 8, "modules": ["q_proj", "v_proj"]},
        "path": "/data/x",
        "color": "red",
        "shape": [2, 3],
    }


def test_stdlib_types():
    assert cap(argparse.Namespace(lr=0.1, sub=argparse.Namespace(x=(1, 2)))) == {
        "lr": 0.1,
        "sub": {"x": [1, 2]},
    }
    out = cap({"c": Color.RED, "l": Level.HIGH, "m": Mode.FAST, "p": PurePosixPath("a/b"), "s": {16, 3, 1}})
    assert out == {"c": "red", "l": 3, "m": "fast", "p": "a/b", "s": [1, 3, 16]}
    assert type(out["l"]) is int and type(out["m"]) is str
    assert sorted(cap({"s": {1, "a"}})["s"], key=str) == [1, "a"]  # unsortable: every item, any order
    assert cap({"f": frozenset({"b", "a"}), "t": ()}) == {"f": ["a", "b"], "t": []}
    assert cap({"od": collections.OrderedDict(b=1, a=2)}) == {"od": {"b": 1, "a": 2}}
    count = cap({"n": Count(5)})["n"]
    assert count == 5 and type(count) is int


def test_non_str_keys_are_stringified():
    assert cap({1: "a", None: "b", (2, 3): "c", Color.RED: "d", 1.5: "e"}) == {
        "1": "a",
        "None": "b",
        "[2, 3]": "c",
        "red": "d",
        "1.5": "e",
    }


def test_bytes():
    assert cap({"ok": b"abc", "bad": b"\xffx", "ba": bytearray(b"z")}) == {
        "ok": "abc",
        "bad": "\\xffx",
        "ba": "z",
    }
    assert cap({"big": b"y" * 20_000})["big"] == "y" * 10_000 + "...<10000 more chars>"


def test_callables_modules_and_classes_become_names():
    assert cap({"fn": os.path.join, "builtin": len, "mod": json, "cls": collections.OrderedDict}) == {
        "fn": "posixpath.join",
        "builtin": "builtins.len",
        "mod": "json",
        "cls": "collections.OrderedDict",
    }
    assert cap({"method": Path.exists, "lam": lambda: 0})["method"] == "pathlib.Path.exists"


def test_torch_dtype_and_device():
    assert cap({"dtype": torch.float16, "bf": torch.bfloat16, "device": torch.device("cpu")}) == {
        "dtype": "torch.float16",
        "bf": "torch.bfloat16",
        "device": "cpu",
    }


def test_numpy_values():
    out = cap(
        {
            "i": np.int64(3),
            "f": np.float32(0.5),
            "f64": np.float64(0.25),
            "b": np.bool_(True),
            "s": np.str_("x"),
            "a": np.arange(3),
            "m": np.zeros((2, 2)),
            "big": np.arange(5000),
            "dtype": np.dtype("float32"),
            "nan": np.float64("nan"),
        }
    )
    assert math.isnan(out.pop("nan"))
    assert out == {
        "i": 3,
        "f": 0.5,
        "f64": 0.25,
        "b": True,
        "s": "x",
        "a": [0, 1, 2],
        "m": [[0.0, 0.0], [0.0, 0.0]],
        "big": "<ndarray shape=(5000,) dtype=int64>",
        "dtype": "float32",
    }


def test_pydantic_v2_and_v1_models():
    import pydantic
    import pydantic.v1

    class Opt(pydantic.BaseModel):
        name: str = "adamw"
        betas: tuple[float, float] = (0.9, 0.95)

    class Train(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        lr: float = 0.1
        out: Path = Path("/o")
        color: Color = Color.RED
        opt: Opt = Opt()
        api_key: str = "sk-123"

    assert cap(Train(seed=7)) == {
        "lr": 0.1,
        "out": "/o",
        "color": "red",
        "opt": {"name": "adamw", "betas": [0.9, 0.95]},
        "api_key": REDACTED,
        "seed": 7,  # extra fields live outside __dict__: model_dump is needed
    }

    class V1(pydantic.v1.BaseModel):
        lr: float = 0.2
        tags: set = {"b", "a"}

    assert cap(V1()) == {"lr": 0.2, "tags": ["a", "b"]}


def test_omegaconf_resolves_and_keeps_unresolvable_interpolations():
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(
        {
            "out": "/o",
            "log": "${out}/logs",
            "bad": "${missing.key}",
            "required": "???",
            "sub": {"x": [1, "${out}", "${missing.key}"], "n": 2},
            "alias": "${sub.n}",
        }
    )
    assert cap(cfg) == {
        "out": "/o",
        "log": "/o/logs",
        "bad": "${missing.key}",
        "required": "???",
        "sub": {"x": [1, "/o", "${missing.key}"], "n": 2},
        "alias": 2,
    }
    assert cap(OmegaConf.create({"a": 1, "b": "${a}", "c": {"d": "${b}"}})) == {"a": 1, "b": 1, "c": {"d": 1}}
    assert cap({"cfg": OmegaConf.create([1, "${nope}"])}) == {"cfg": [1, "${nope}"]}


def test_training_arguments(tmp_path):
    from transformers import TrainingArguments

    args = TrainingArguments(
        output_dir=str(tmp_path), report_to="none", hub_token="hf_secret", learning_rate=3e-4
    )
    out = cap(args)
    assert out["learning_rate"] == 3e-4
    assert out["output_dir"] == str(tmp_path)
    assert out["report_to"] == []
    assert out["lr_scheduler_type"] == "linear"
    assert out["hub_token"] == REDACTED
    assert "hf_secret" not in json.dumps(out)
    assert out["include_num_input_tokens_seen"] == "no"


def test_llama_config():
    from transformers import LlamaConfig

    out = cap(
        LlamaConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=100
        )
    )
    assert (out["hidden_size"], out["num_hidden_layers"], out["vocab_size"]) == (64, 2, 100)
    assert out["id2label"] == {"0": "LABEL_0", "1": "LABEL_1"}
    assert (out["bos_token_id"], out["eos_token_id"], out["pad_token_id"]) == (1, 2, None)
    assert out["model_type"] == "llama"


def test_peft_lora_config():
    from peft import LoraConfig

    out = cap(LoraConfig(r=4, lora_alpha=16, target_modules=["v_proj", "q_proj"], task_type="CAUSAL_LM"))
    assert out["r"] == 4 and out["lora_alpha"] == 16
    assert out["target_modules"] == ["q_proj", "v_proj"]
    assert out["peft_type"] == "LORA" and out["task_type"] == "CAUSAL_LM"
    assert cap({"lora": LoraConfig(r=2)})["lora"]["r"] == 2


def test_to_dict_and_plain_objects():
    class WithToDict:
        def to_dict(self):
            return {"a": (1, 2)}

    class Plain:
        def __init__(self):
            self.lr = 0.5
            self.cfg = WithToDict()
            self._private = "hidden"

    class FailingToDict(Plain):
        def to_dict(self):
            raise RuntimeError("broken")

    assert cap(Plain()) == {"lr": 0.5, "cfg": {"a": [1, 2]}}
    assert cap(FailingToDict()) == {"lr": 0.5, "cfg": {"a": [1, 2]}}


def test_cycles_are_cut_and_shared_values_kept():
    cyclic: dict = {"a": 1}
    cyclic["self"] = cyclic
    loop: list = [1]
    loop.append(loop)
    node = argparse.Namespace(name="n")
    node.me = node
    shared = {"x": 1}
    assert cap({"d": cyclic, "l": loop, "o": node, "s1": shared, "s2": shared}) == {
        "d": {"a": 1, "self": "<cycle>"},
        "l": [1, "<cycle>"],
        "o": {"name": "n", "me": "<cycle>"},
        "s1": {"x": 1},
        "s2": {"x": 1},
    }


def test_depth_is_capped():
    deep: dict = {"leaf": 1}
    for _ in range(30):
        deep = {"a": deep}
    out = cap(deep)
    for _ in range(MAX_DEPTH - 1):
        out = out["a"]
    assert out == {"a": "<max depth: dict>"}


def test_huge_values_are_capped():
    out = cap(
        {"big": "x" * 1_000_000, "long": list(range(1_000_000)), "wide": {f"k{i}": i for i in range(1500)}}
    )
    assert out["big"] == "x" * 10_000 + "...<990000 more chars>"
    assert out["long"] == [*range(1000), "<999000 more items>"]
    assert len(out["wide"]) == 1001 and out["wide"]["k999"] == 999
    assert out["wide"]["<truncated>"] == "<500 more keys>"
    assert cap({"s": set(range(2000))})["s"][-1] == "<1000 more items>"


def test_repr_fallback_and_hostile_objects():
    class BadRepr:
        __slots__ = ()

        def __repr__(self):
            raise RuntimeError("no")

    class LongRepr:
        __slots__ = ()

        def __repr__(self):
            return "r" * 20_000

    class Slots:
        __slots__ = ()

        def __repr__(self):
            return "Slots()"

    class Hostile:
        def __getattribute__(self, name):
            raise RuntimeError(name)

    class BadItems(collections.abc.Mapping):
        def __getitem__(self, key):
            raise KeyError(key)

        def __iter__(self):
            raise RuntimeError("no iteration")

        def __len__(self):
            return 1

    @dataclasses.dataclass
    class BadField:
        x: int = 1

        def __getattribute__(self, name):
            if name == "x":
                raise ValueError("x")
            return object.__getattribute__(self, name)

    class Incomparable:
        __slots__ = ()

        def __lt__(self, other):
            raise ValueError("no order")

        def __repr__(self):
            return "I"

    out = cap(
        {
            "bad": BadRepr(),
            "long": LongRepr(),
            "slots": Slots(),
            "hostile": Hostile(),
            "items": BadItems(),
            "field": BadField(),
            "set": {Incomparable(), Incomparable()},
            "nan": math.nan,
            "inf": -math.inf,
        }
    )
    assert out["bad"] == "<unrepresentable BadRepr>"
    assert out["long"] == "r" * 10_000 + "...<10000 more chars>"
    assert out["slots"] == "Slots()"
    assert out["hostile"] == "<unrepresentable Hostile>"
    assert out["items"] == "<unrepresentable BadItems>"
    assert out["field"] == "<unrepresentable BadField>"
    assert out["set"] == ["I", "I"]
    assert math.isnan(out["nan"]) and out["inf"] == -math.inf


SECRET_KEYS = [
    "hub_token",
    "HF_TOKEN",
    "hfToken",
    "token",
    "push_to_hub_token",
    "ms_hub_token",
    "access_token",
    "use_auth_token",
    "wandb_api_key",
    "WANDB_API_KEY",
    "apiKey",
    "apikey",
    "db_password",
    "passwd",
    "aws_secret_access_key",
    "AWS_ACCESS_KEY_ID",
    "client_secret",
    "private_key",
    "credentials",
    "Authorization",
    "auth",
]

PUBLIC_KEYS = [
    "max_tokens",
    "num_tokens",
    "max_new_tokens",
    "tokenizer",
    "tokenizer_name",
    "tokenizer_name_or_path",
    "pad_token_id",
    "eos_token_id",
    "decoder_start_token_id",
    "padTokenId",
    "padToken",
    "eosToken",
    "token_type_ids",
    "pad_token",
    "eos_token",
    "bos_token",
    "image_token",
    "special_tokens",
    "additional_special_tokens",
    "tokens_per_second",
    "include_num_input_tokens_seen",
    "average_tokens_across_devices",
    "clean_up_tokenization_spaces",
    "n_token",
    "author",
    "author_email",
    "authority",
    "learning_rate",
    "",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_keys_are_redacted(key):
    assert is_secret_key(key)
    assert cap({key: "s3cr3t"}) == {key: REDACTED}
    assert cap({"nested": [{key: {"a": 1}}]}) == {"nested": [{key: REDACTED}]}


@pytest.mark.parametrize("key", PUBLIC_KEYS)
def test_public_keys_are_kept(key):
    assert not is_secret_key(key)
    assert cap({key: "v"}) == {key: "v"}


@pytest.mark.parametrize("value", [None, "", True, False, [], {}])
def test_blank_secrets_are_kept(value):
    assert cap({"hub_token": value}) == {"hub_token": value}


@pytest.mark.parametrize("value", [0, 1234, "x", [1], {"a": 1}, b"raw"])
def test_non_blank_secrets_are_redacted(value):
    assert cap({"api_key": value}) == {"api_key": REDACTED}


def test_redaction_reaches_dataclass_fields_and_attributes():
    @dataclasses.dataclass
    class Hub:
        repo: str = "me/model"
        hub_token: str = "hf_abc"

    assert cap(argparse.Namespace(hub=Hub(), db_password="pw")) == {
        "hub": {"repo": "me/model", "hub_token": REDACTED},
        "db_password": REDACTED,
    }


def test_import_needs_no_ml_framework():
    code = (
        "import sys; from tunetrack.config import capture; "
        "capture({'a': [1, {2}], 'b': object(), 'p': __import__('pathlib').Path('x')}); "
        "print(sorted({'numpy', 'torch', 'omegaconf', 'pydantic', 'transformers'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_flatten():
    nested = {"a": {"b": 1, "c": {"d": [1, {"e": 2}]}}, "empty": {}, "x": None}
    assert flatten(nested) == {"a.b": 1, "a.c.d": [1, {"e": 2}], "empty": {}, "x": None}
    assert flatten({"a": {"b": 1}}, sep="/") == {"a/b": 1}
    assert flatten({}) == {}


def test_merge():
    base = {"a": {"b": 1, "c": 2}, "x": 1, "d": {"k": 1}}
    update = {"a": {"c": 3, "n": {"m": 1}}, "y": 2, "d": 5, "x": {"z": 1}}
    assert merge(base, update) == {"a": {"b": 1, "c": 3, "n": {"m": 1}}, "x": {"z": 1}, "y": 2, "d": 5}
    assert base == {"a": {"b": 1, "c": 2}, "x": 1, "d": {"k": 1}}  # inputs untouched
    assert update == {"a": {"c": 3, "n": {"m": 1}}, "y": 2, "d": 5, "x": {"z": 1}}
    assert merge({}, {"a": 1}) == {"a": 1} and merge({"a": 1}, {}) == {"a": 1}


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(),
)
anything = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children),
        st.tuples(children, children),
        st.frozensets(st.one_of(st.integers(), st.text(), st.floats())),
        st.sets(st.one_of(st.integers(), st.text(), st.binary())),
        st.dictionaries(st.one_of(st.text(), st.integers(), st.none(), st.binary()), children),
    ),
    max_leaves=30,
)


@settings(deadline=None)
@given(anything)
def test_capture_never_raises_and_is_json_safe(value):
    cap(value)
    cap({"root": value})


plain_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30)),
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(alphabet="abcdxyz_", max_size=8), children, max_size=5),
    ),
    max_leaves=20,
)


@settings(deadline=None)
@given(plain_json)
def test_plain_json_is_captured_unchanged(value):
    assert capture({"root": value}) == {"root": value}
    assert merge({}, capture({"root": value})) == {"root": value}


def test_diff_compares_configs_as_data():
    """One comparison for every view: ``True`` and ``1`` differ (also inside lists), ``NaN`` is the same
    setting as ``NaN``, a missing key differs from one set to ``None``, ``1`` equals ``1.0``."""
    a = {"flag": True, "x": math.nan, "opt": None, "n": 1, "lst": [True, math.nan], "d": {}}
    b = {"flag": 1, "x": math.nan, "n": 1.0, "lst": [1, math.nan], "d": {}}
    c = {"flag": True, "x": math.nan, "opt": None, "n": 1, "lst": [True, math.nan], "d": {}}
    assert [k for k, _ in diff([a, b])] == ["flag", "lst", "opt"]
    assert diff([a, c]) == []
    assert [(k, v[2]) for k, v in diff([a, c, b])] == [("flag", 1), ("lst", [1, math.nan]), ("opt", MISSING)]
    assert same(math.nan, math.nan) and not same(None, MISSING) and not same(True, 1) and same(1, 1.0)
