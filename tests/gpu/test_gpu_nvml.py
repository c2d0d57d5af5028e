"""NVIDIA GPU metrics through the real NVML (no fake), on a GPU that is kept busy meanwhile.

Every documented ``gpu.{i}.*`` NVML field must be there with a plausible value (checked against
what CUDA, PyTorch and ``nvidia-smi`` say about the same device), named by the index the job uses,
and ``memory.job_bytes`` must count this process and its children.
"""

from __future__ import annotations

import json
import time

import pynvml
import pytest
import torch
from gpuwork import TrainStep, gpm_allowed, nvidia_smi, nvml_handle, nvml_uuid, queue_matmuls

from support.helpers import run_script, spawn_script
from tunetrack import Tracker, open_run
from tunetrack.system.nvidia import NvidiaSource

GIB = 2**30
#: the NVML fields docs/system.md documents (allocator fields: test_gpu_allocator.py)
FIELDS = (
    "util",
    "mem_util",
    "memory.used_bytes",
    "memory.total_bytes",
    "memory.percent",
    "memory.job_bytes",
    "temp_c",
    "power_w",
    "power_limit_w",
    "clock.sm_mhz",
    "clock.mem_mhz",
    "throttle_reasons",
    "ecc.uncorrected",
    "ecc.corrected",
)
GPM = ("gpm.sm_active", "gpm.tensor_active", "gpm.dram_active")
ECC = ("ecc.uncorrected", "ecc.corrected")
#: a child process of this test that holds 1 GiB of GPU memory (a data worker, say)
HOLDER = """
    import time, torch
    x = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    print("ready", flush=True)
    time.sleep(300)
"""


@pytest.fixture(scope="module")
def nvml():
    pynvml.nvmlInit()
    yield pynvml
    pynvml.nvmlShutdown()


def test_every_nvml_field_is_plausible_on_a_busy_gpu(nvml):
    torch.cuda.init()
    handle = nvml_handle(nvml)
    uuid = nvml_uuid()
    name = torch.cuda.get_device_name(0)
    try:
        ecc_on = nvml.nvmlDeviceGetEccMode(handle)[0] == nvml.NVML_FEATURE_ENABLED
    except nvml.NVMLError:  # a board without ECC
        ecc_on = False
    gpm_ok, gpm_why = gpm_allowed(nvml, handle)
    held = torch.empty(2 * GIB, dtype=torch.uint8, device="cuda")  # 2 GiB of this process's own
    child = spawn_script(HOLDER)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready", child.stderr
        source = NvidiaSource.create()
        assert source is not None, "NVML sees no GPU on a GPU machine"
        try:
            source.sample()  # the first pass: GPM needs two samples for a rate
            busy, done = queue_matmuls(4.0)
            time.sleep(0.5)  # the GPU has been busy for longer than NVML's sample period
            assert not done.query(), "the queued work ran out before the sample"
            sample = source.sample()
            assert not done.query(), "the queued work ran out during the sample"
            reserved = torch.cuda.memory_reserved(0)
            torch.cuda.synchronize()
            del busy
        finally:
            source.close()
    finally:
        child.kill()
        child.wait()
    smi = nvidia_smi(uuid, ["memory.total", "enforced.power.limit", "clocks.max.sm"])
    print(f"\n{name} ({uuid}), ECC {'on' if ecc_on else 'off'}, {gpm_why}")
    print(json.dumps({k: v for k, v in sorted(sample.items()) if k.startswith("gpu.0.")}, indent=1))

    # every documented field, named by the job's index: gpu.0 .. gpu.{n-1}, nothing else
    expected = [f for f in FIELDS if ecc_on or f not in ECC] + (list(GPM) if gpm_ok else [])
    missing = [f for f in expected if f"gpu.0.{f}" not in sample]
    assert not missing, f"fields missing on {name}: {missing}"
    if not ecc_on:
        assert not any(f"gpu.0.{f}" in sample for f in ECC), "ECC counters reported while ECC is off"
    if not gpm_ok:
        assert not any(f"gpu.0.{f}" in sample for f in GPM), "GPM reported while the driver refuses it"
    indices = {int(key.split(".")[1]) for key in sample}
    assert indices == set(range(torch.cuda.device_count()))
    s = {f: sample[f"gpu.0.{f}"] for f in expected}

    # utilization: the GPU was busy throughout NVML's last sample period
    assert 50 <= s["util"] <= 100
    assert 0 <= s["mem_util"] <= 100
    # memory: NVML's total is the device's (nvidia-smi, and CUDA's own view of it)
    total = s["memory.total_bytes"]
    assert abs(total / 2**20 - int(smi["memory.total"])) <= 1  # nvidia-smi reports MiB
    assert abs(total - torch.cuda.mem_get_info(0)[1]) <= 0.05 * total
    if "H100" in name:
        assert 64 * GIB <= total <= 100 * GIB
    assert reserved + GIB <= s["memory.used_bytes"] <= total  # this process's reservations + the child's
    assert s["memory.percent"] == pytest.approx(100.0 * s["memory.used_bytes"] / total)
    # the job's processes: this one (its allocator's reservations and its CUDA context) and the child
    assert reserved + GIB <= s["memory.job_bytes"] <= s["memory.used_bytes"]
    # temperature, power, clocks: a busy GPU's
    assert 15 <= s["temp_c"] <= 100
    assert s["power_limit_w"] == pytest.approx(float(smi["enforced.power.limit"]), abs=1.0)
    assert 100 <= s["power_limit_w"] <= 1200
    assert 60 <= s["power_w"] <= 1.1 * s["power_limit_w"]
    assert 500 <= s["clock.sm_mhz"] <= int(smi["clocks.max.sm"]) + 1
    assert 500 <= s["clock.mem_mhz"] <= 6000
    assert isinstance(s["throttle_reasons"], int) and 0 <= s["throttle_reasons"] < 2**64
    for f in ECC if ecc_on else ():
        assert isinstance(s[f], int) and s[f] >= 0
    if gpm_ok:  # bf16 matrix products: the SMs and their tensor pipes were busy
        assert all(0 <= s[f] <= 100 for f in GPM)
        assert s["gpm.sm_active"] >= 20 and s["gpm.tensor_active"] >= 5
    del held


def test_tracker_records_real_gpu_metrics_at_every_interval(root):
    """The Tracker with its default sources on a GPU: NVML, allocator and host rows every 0.2 s,
    apart from the training metrics."""
    work = TrainStep()
    tracker = Tracker(dir=root, system_interval=0.2).start()
    start = time.monotonic()
    step = 0
    while time.monotonic() - start < 3.0:
        step += 1
        tracker.log({"loss": work.step()}, step=step)
        if step % 20 == 0:
            torch.cuda.synchronize()  # keep the host near the GPU, so the run lasts about 3 s of work
    tracker.finish()
    run = open_run(tracker.id, dir=root)
    assert run.keys() == ["loss"] and len(run.series("loss")) == step
    keys = set(run.system_keys())
    for f in ("util", "memory.used_bytes", "memory.job_bytes", "power_w", "temp_c", "memory.allocated"):
        assert f"gpu.0.{f}" in keys, f
    assert {"cpu.percent", "mem.used_bytes", "proc.rss_bytes"} <= keys
    (node,) = run.nodes
    util = run.system_series("gpu.0.util")[node]
    gaps = [b - a for a, b in zip(util.times[:-1], util.times[1:])]
    assert len(util) >= 10, f"{len(util)} samples in about 3 s at 0.2 s"
    assert 0.15 <= sorted(gaps)[len(gaps) // 2] <= 0.3 and max(gaps) < 1.0, gaps


def _visible(spec: str) -> dict:
    code = """
        import json, torch
        from tunetrack.system.nvidia import NvidiaSource
        from tunetrack.system.torch_alloc import TorchAllocatorSource
        out = {"devices": torch.cuda.device_count()}
        source = NvidiaSource.create()
        out["source"] = source is not None
        if out["devices"]:
            held = torch.empty(2**30, dtype=torch.uint8, device="cuda:0")
            torch.cuda.synchronize()
            out["uuid"] = f"GPU-{torch.cuda.get_device_properties(0).uuid}"
            out["allocator"] = TorchAllocatorSource().sample()
        if source is not None:
            out["sample"] = source.sample()
            source.close()
        print(json.dumps(out))
    """
    env = {"CUDA_VISIBLE_DEVICES": spec, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    proc = run_script(code, env=env, timeout=300)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("form", ["index", "uuid"])
def test_cuda_visible_devices_is_respected(nvml, form):
    """The last physical GPU, made visible by index or by UUID, is the job's gpu.0 (on a one-GPU
    machine that is physical GPU 0; with more, gpu.0 is then a GPU NVML numbers differently)."""
    count = nvml.nvmlDeviceGetCount()
    physical = count - 1
    handle = nvml.nvmlDeviceGetHandleByIndex(physical)
    uuid = nvml.nvmlDeviceGetUUID(handle)
    uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
    got = _visible(str(physical) if form == "index" else uuid)
    assert got["devices"] == 1 and got["source"] and got["uuid"] == uuid
    sample = got["sample"]
    assert {key.split(".")[1] for key in sample} == {"0"}, sorted(sample)
    assert sample["gpu.0.memory.total_bytes"] == nvml.nvmlDeviceGetMemoryInfo(handle).total
    assert sample["gpu.0.memory.job_bytes"] >= 2**30  # the subprocess's own gigabyte, on that GPU
    assert {key.split(".")[1] for key in got["allocator"]} == {"0"}
    assert got["allocator"]["gpu.0.memory.allocated"] > 0


@pytest.mark.parametrize("spec", ["", "-1", "999"])
def test_no_visible_gpu_gives_no_nvidia_source(nvml, spec):
    got = _visible(spec)
    assert got == {"devices": 0, "source": False}


def test_job_memory_counts_only_the_jobs_own_processes(nvml):
    """A process on the same GPU that is not the sampling process or one of its descendants (here:
    a sibling, as another job's process would be) is not counted in ``memory.job_bytes``."""
    stranger = spawn_script(HOLDER)
    try:
        assert stranger.stdout is not None and stranger.stdout.readline().strip() == "ready"
        code = """
            import json
            from tunetrack.system.nvidia import NvidiaSource
            source = NvidiaSource.create()
            print(json.dumps(source.sample()))
            source.close()
        """
        sample = json.loads(run_script(code, timeout=120).stdout.strip().splitlines()[-1])
    finally:
        stranger.kill()
        stranger.wait()
    # the sampling process never touches CUDA (no GPU memory of its own); the stranger's 1 GiB, and
    # whatever this pytest process (the sampler's parent) holds, belong to other jobs
    assert sample["gpu.0.memory.job_bytes"] == 0
    assert sample["gpu.0.memory.used_bytes"] >= 2**30
