"""A real Transformers ``Trainer`` fine-tune of a small Llama in bf16 on the GPU, recorded by
``TunetrackCallback``: the training metrics, GPU metrics at every system interval (1 s), and a sane
``perf/mfu`` against the GPU's peak.

Also a CPU dry run (``TUNETRACK_GPU_TESTS_ON_CPU=1``): a tiny Llama trains in bf16 on CPU through the
same code, with the GPU checks (``gpu.*`` rows, MFU) off. The model is built from a config and the
tokenizer trained on a few local sentences (``examples/_tiny.py``): no hub access.
"""

from __future__ import annotations

import math
import statistics
import time

import pytest
import torch
from _tiny import LINES, build_tokenizer
from transformers import LlamaConfig, LlamaForCausalLM, PrinterCallback, Trainer, TrainingArguments

from tunetrack import open_run
from tunetrack.integrations.transformers import TunetrackCallback

CUDA = torch.cuda.is_available()
INTERVAL = 1.0  # system_interval, seconds
#: on the GPU about 100M parameters, 16 x 256 tokens a step, ten-odd seconds of training; on CPU
#: a tiny model for about 5 s
SIZE = (
    dict(
        hidden=1024, intermediate=2816, layers=8, heads=16, kv_heads=8, seq=256, batch=16, steps=500, lr=3e-4
    )
    if CUDA
    else dict(hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, seq=32, batch=4, steps=100, lr=1e-3)
)
#: fields every system row of the run must hold while training
ROW_KEYS = (
    ["gpu.0.util", "gpu.0.memory.used_bytes", "gpu.0.power_w", "gpu.0.memory.allocated", "cpu.percent"]
    if CUDA
    else ["cpu.percent", "mem.used_bytes", "proc.rss_bytes"]
)


def _model(tok) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=SIZE["hidden"],
        intermediate_size=SIZE["intermediate"],
        num_hidden_layers=SIZE["layers"],
        num_attention_heads=SIZE["heads"],
        num_key_value_heads=SIZE["kv_heads"],
        max_position_embeddings=SIZE["seq"],
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return LlamaForCausalLM(config)


def _dataset(tok, rows: int) -> list[dict[str, list[int]]]:
    """Causal-LM rows of ``seq`` tokens (a plain list: the Trainer takes any sized dataset)."""
    out = []
    for i in range(rows):
        text = " ".join(LINES[i % 5 : i % 5 + 40])
        ids = tok(text, truncation=True, max_length=SIZE["seq"], padding="max_length")["input_ids"]
        out.append({"input_ids": ids, "labels": ids})
    return out


@pytest.mark.cpu_dry_run
def test_trainer_bf16_finetune_records_training_gpu_metrics_and_mfu(tmp_path, root):
    tok = build_tokenizer()
    callback = TunetrackCallback(
        project="gpu", name="llama-bf16", dir=root, system=True, system_interval=INTERVAL
    )
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=SIZE["steps"],
        per_device_train_batch_size=SIZE["batch"],
        learning_rate=SIZE["lr"],
        bf16=True,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=not CUDA,
        dataloader_num_workers=0,
    )
    trainer = Trainer(model=_model(tok), args=args, train_dataset=_dataset(tok, 256), callbacks=[callback])
    trainer.remove_callback(PrinterCallback)  # no line per step on the console
    start = time.time()
    trainer.train()
    end = time.time()
    callback.finish()
    run = open_run(callback.tracker.id, dir=root)
    assert run.state == "finished"

    # the training metrics: what the Trainer logged, once per step
    steps = list(range(1, SIZE["steps"] + 1))
    train_rows = [h for h in trainer.state.log_history if "loss" in h]
    for key in ("loss", "grad_norm", "learning_rate"):
        assert run.series(key).steps.tolist() == steps, key
        assert run.series(key).values.tolist() == [h[key] for h in train_rows], key
    losses = run.series("loss").values.tolist()
    assert all(math.isfinite(v) for v in losses)
    assert statistics.mean(losses[-10:]) < losses[0]  # it learned something
    for key in ("train_loss", "train_runtime", "total_flos", "perf/tflops"):
        assert run.series(key).steps.tolist() == [SIZE["steps"]], key

    # system metrics at every interval while it trained
    (node,) = run.nodes
    rows = [r for r in run.system_rows() if start <= r["time"] <= end]
    times = [r["time"] for r in rows]
    gaps = [b - a for a, b in zip(times[:-1], times[1:])]
    print(f"\n{end - start:.1f} s of training, {len(rows)} system rows, largest gap {max(gaps):.2f} s")
    assert len(rows) >= (end - start) / INTERVAL - 2
    assert max(gaps) <= 2 * INTERVAL, gaps
    for key in ROW_KEYS:
        assert all(key in r for r in rows), f"{key} missing from some system rows"

    if not CUDA:  # CPU dry run: no GPU metrics, and no MFU without a GPU's peak
        assert not [k for k in run.system_keys() if k.startswith("gpu.")]
        assert "perf/mfu" not in run.keys()
        return
    assert max(r["gpu.0.util"] for r in rows) > 50  # the GPU did the work
    assert min(r["gpu.0.memory.allocated"] for r in rows) > 0  # the model lives on it
    name = torch.cuda.get_device_name(0)
    (mfu,) = run.series("perf/mfu").values.tolist()
    (tflops,) = run.series("perf/tflops").values.tolist()
    peak = tflops / mfu  # the peak the callback divided by (its table's entry for this GPU)
    print(f"{name}: {tflops:.1f} TFLOP/s achieved, MFU {mfu:.3f} of a {peak:.1f} TFLOP/s peak")
    assert 0 < mfu < 1
    if "H100" in name:  # dense bf16 peak: 989.4 (SXM), 835 (NVL), 756 (PCIe) TFLOP/s
        assert 700 <= peak <= 1000, peak
