"""What the ms-swift tests share: the venv's ``swift``, the offline environment, the common arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.helpers import SRC

#: the ``swift`` and ``python`` of the venv running the tests
BIN = Path(sys.executable).parent
#: offline hubs; DEVICE_TFLOPS: ms-swift's perf_log callback would otherwise measure the device with
#: 8192x8192 matmuls (minutes on a CPU), and then fail on torch.cuda.synchronize
ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "MODELSCOPE_OFFLINE": "1",
    "USE_HF": "1",
    "DEVICE_TFLOPS": "1",
    "OMP_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
LINES = [
    "the quick brown fox jumps over the lazy dog",
    "what is two plus two? two plus two is four",
    "you are a helpful assistant. say red, green or blue",
    "user assistant system",
] * 20
WORDS = ["red", "green", "blue", "four", "fox", "dog", "two", "lazy"]
#: what every test's ``swift`` command shares: few steps, no workers, no hub check, a fixed folder
COMMON = [
    "--model_type", "qwen2", "--template", "qwen", "--tuner_type", "lora", "--lora_rank", "4",
    "--logging_steps", "1", "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "1",
    "--report_to", "none", "--dataloader_num_workers", "0", "--dataset_num_proc", "1",
    "--max_length", "64", "--check_model", "false", "--learning_rate", "1e-3",
]  # fmt: skip


def run_swift(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """Run a command in the venv with the offline environment; its output (it must succeed)."""
    full = {**os.environ, **ENV, "PYTHONPATH": SRC, **(env or {})}
    proc = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout + proc.stderr
