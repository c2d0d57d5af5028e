"""Derived throughput metrics from what the frameworks log."""

from __future__ import annotations

import pytest
import torch

from tunetrack.integrations.support.throughput import PEAK_BF16_TFLOPS, Throughput, peak_tflops


def test_rates_from_steps_and_cumulative_tokens():
    t = Throughput(samples_per_step=32)
    assert t.update(10, 100.0, {"loss": 1.0, "num_input_tokens_seen": 1000}) == {}
    out = t.update(20, 105.0, {"loss": 0.9, "num_input_tokens_seen": 11000})
    assert out == {
        "perf/step_time_s": 0.5,
        "perf/steps_per_s": 2.0,
        "perf/samples_per_s": 64.0,
        "perf/tokens_per_s": 2000.0,
    }
    assert t.update(20, 106.0, {"eval_loss": 1.0}) == {}  # an evaluation at the same step is not a step


def test_trl_num_tokens_and_torchtune_rate():
    trl = Throughput()
    trl.update(1, 0.0, {"num_tokens": 100.0})
    assert trl.update(2, 2.0, {"num_tokens": 500.0})["perf/tokens_per_s"] == 200.0
    tt = Throughput(num_gpus=4)
    assert tt.update(1, 0.0, {"tokens_per_second_per_gpu": torch.tensor(1500.0)}) == {
        "perf/tokens_per_s": 6000.0
    }


def test_tflops_and_mfu():
    out = Throughput(gpu_name="NVIDIA H100 80GB HBM3", num_gpus=8).update(
        100, 10.0, {"total_flos": 3.9576e18, "train_runtime": 1000.0}
    )
    assert out["perf/tflops"] == pytest.approx(3957.6)
    assert out["perf/mfu"] == pytest.approx(3957.6 / (989.4 * 8))
    assert "perf/mfu" not in Throughput(gpu_name=None).update(
        1, 1.0, {"total_flos": 1e15, "train_runtime": 1.0}
    )


@pytest.mark.parametrize(
    "name, peak",
    [
        ("NVIDIA A100-SXM4-80GB", 312.0),
        ("NVIDIA H100 PCIe", 756.0),
        ("NVIDIA L40S", 362.1),
        ("NVIDIA L4", 121.0),
        ("Tesla T4", 65.0),
        ("NVIDIA GeForce RTX 4090", 165.2),
        ("Intel Arc", None),
    ],
)
def test_peak_table(name, peak):
    assert peak_tflops(name) == peak
    assert all(v > 0 for v in PEAK_BF16_TFLOPS.values())
