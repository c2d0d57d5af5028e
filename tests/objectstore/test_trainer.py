"""A real Trainer + LoRA run recorded straight into a bucket (moto's S3 server on 127.0.0.1): its
checkpoints (saved every 2 steps, one kept, evaluated before each save) and its inputs, read back from
the bucket alone by the CLI in another process with a cache of its own, as a colleague on another
machine reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.helpers import SRC, assert_hashed_as_on_disk

EXAMPLES = str(Path(SRC).parent / "examples")


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


TRAIN = """
import sys
sys.path.insert(0, sys.argv[3])
from _tiny import build_dataset, build_model, build_tokenizer
from peft import LoraConfig, get_peft_model
from transformers import Trainer, TrainingArguments
from tunetrack.integrations.transformers import TunetrackCallback

tok = build_tokenizer()
model = get_peft_model(build_model(tok), LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
args = TrainingArguments(
    output_dir=sys.argv[2], max_steps=6, per_device_train_batch_size=4, logging_steps=1, learning_rate=1e-3,
    eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=2, save_total_limit=1,
    report_to="none", use_cpu=True, disable_tqdm=True,
)
Trainer(
    model=model, args=args, train_dataset=build_dataset(tok), eval_dataset=build_dataset(tok, rows=8),
    processing_class=tok, callbacks=[TunetrackCallback(project="bucket", name="lora", dir=sys.argv[1])],
).train()
"""


def tunetrack(s3_url: str, cache: Path, *args: str) -> str:
    """The CLI in a process of its own, with a cache of its own: only the bucket is shared."""
    done = subprocess.run(
        [sys.executable, "-m", "tunetrack", *args, "--dir", s3_url],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, "TUNETRACK_CACHE": str(cache)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_trainer_run_in_a_bucket_records_its_checkpoints_and_inputs(s3_url, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", TRAIN, s3_url, str(out), EXAMPLES],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    found = json.loads(tunetrack(s3_url, elsewhere, "checkpoints", "lora", "--best", "eval_loss", "--json"))
    assert [(c["step"], c["kind"], c["deleted"]) for c in found] == [
        (2, "adapter", True),
        (4, "adapter", True),
        (6, "adapter", False),
    ]
    assert all("eval_loss" in c["metrics"] for c in found)  # the evaluation before each save
    best = min(found, key=lambda c: c["metrics"]["eval_loss"])
    assert [c["step"] for c in found if c["best"]] == [best["step"]]
    kept = found[-1]
    assert kept["path"] == str(out / "checkpoint-6")
    assert_hashed_as_on_disk(kept)
    assert "adapter_model.safetensors" in {f["name"] for f in kept["files"]}
    inputs = json.loads(tunetrack(s3_url, elsewhere, "artifacts", "--json"))
    assert {a["kind"] for a in inputs} == {"model", "dataset", "tokenizer"}
    graph = json.loads(tunetrack(s3_url, elsewhere, "lineage", "lora@6", "--json"))
    assert {n["type"] for n in graph["nodes"]} == {"checkpoint", "run", "artifact"}
