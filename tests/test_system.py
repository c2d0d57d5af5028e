"""System metrics through the library boundaries: a fake NVML (and amdsmi) module, real psutil,
a fake cgroup folder. The same tests run unchanged on a GPU machine: they never touch the real GPU."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import types

import pytest

from support.fake_nvml import FakeGpu, FakeNvml
from support.helpers import SRC, run_script, wait_until
from tunetrack import Tracker
from tunetrack.reader import list_runs, open_run
from tunetrack.system import SystemSampler
from tunetrack.system.amd import AmdSource
from tunetrack.system.host import HostSource
from tunetrack.system.nvidia import NvidiaSource, visible_devices
from tunetrack.system.torch_alloc import TorchAllocatorSource


@pytest.fixture
def nvml(monkeypatch):
    """Install a fake NVML with two GPUs; tests adjust ``fake.gpus`` before creating the source."""
    fake = FakeNvml([FakeGpu(uuid="GPU-aaa", util=11), FakeGpu(uuid="GPU-bbb", util=22, temp=70)])
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return fake


def test_every_nvidia_metric_path(nvml):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a data worker, say
    nvml.gpus[0].processes = [(os.getpid(), 3 * 2**30), (child.pid, 2**29), (999_999_999, 2**30)]
    src = NvidiaSource.create()
    try:
        first = src.sample()
        second = src.sample()
    finally:
        child.kill()
        child.wait()
    assert first["gpu.0.util"] == 11 and first["gpu.1.util"] == 22
    assert first["gpu.0.mem_util"] == 20
    assert first["gpu.0.memory.used_bytes"] == 8 * 2**30 and first["gpu.0.memory.total_bytes"] == 80 * 2**30
    assert first["gpu.0.memory.percent"] == pytest.approx(10.0)
    assert first["gpu.1.temp_c"] == 70
    assert first["gpu.0.power_w"] == pytest.approx(300.0) and first["gpu.0.power_limit_w"] == pytest.approx(
        700.0
    )
    assert (first["gpu.0.clock.sm_mhz"], first["gpu.0.clock.mem_mhz"]) == (1980, 2619)
    assert first["gpu.0.throttle_reasons"] == 0
    assert (first["gpu.0.ecc.uncorrected"], first["gpu.0.ecc.corrected"]) == (0, 2)
    assert first["gpu.0.memory.job_bytes"] == 3 * 2**30 + 2**29  # another job's process is not counted
    assert "gpu.0.gpm.sm_active" not in first  # GPM needs two samples
    assert (
        second["gpu.0.gpm.sm_active"],
        second["gpu.0.gpm.tensor_active"],
        second["gpu.0.gpm.dram_active"],
    ) == (71.5, 42.0, 33.25)
    src.close()


def test_a_pass_reads_the_power_limit_once_and_reuses_the_gpm_samples(nvml):
    nvml.gpus += [FakeGpu(uuid=f"GPU-{i}") for i in range(6)]  # 8 GPUs, read in parallel
    src = NvidiaSource.create()
    samples = [src.sample() for _ in range(4)]
    assert nvml.calls["nvmlDeviceGetEnforcedPowerLimit"] == 8  # once per GPU, then remembered
    assert all(s[f"gpu.{i}.power_limit_w"] == 700.0 for s in samples for i in range(8))
    assert nvml.calls["nvmlGpmQueryDeviceSupport"] == nvml.calls["nvmlGpmSampleAlloc"] / 2 == 8
    # every later pass compares an older with a newer sample of the same GPU (the fake checks)
    assert all(s[f"gpu.{i}.gpm.tensor_active"] == 42.0 for s in samples[1:] for i in range(8))
    assert [s["gpu.1.util"] for s in samples] == [22] * 4 and samples[0]["gpu.7.util"] == 50
    src.close()
    assert nvml.live_gpm_samples == 0


def test_job_memory_counts_the_other_ranks_of_this_node():
    """Under a launcher, GPU memory of the launcher's other children (the other ranks) is the job's."""
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        code = """
            import json, os, sys
            from tunetrack.system.nvidia import job_pids
            me = os.getpid()
            print(json.dumps([sorted(job_pids([int(sys.argv[1]), 999_999_999])), me in job_pids([me])]))
        """
        alone = json.loads(run_script(code, str(sibling.pid)).stdout)
        ranked = json.loads(run_script(code, str(sibling.pid), env={"LOCAL_RANK": "1"}).stdout)
    finally:
        sibling.kill()
        sibling.wait()
    assert alone[0] == []  # not launched: a sibling is someone else's process
    assert ranked[0] == [sibling.pid]  # launched: the launcher's other child is another rank
    assert alone[1] and ranked[1]  # the process itself always counts


def test_passes_while_the_interpreter_exits_still_read_every_gpu(tmp_path):
    """After Python stops taking thread-pool work at exit, passes read the GPUs in turn, quietly."""
    code = """
        import atexit, sys, time
        from support.fake_nvml import FakeGpu, FakeNvml
        sys.modules["pynvml"] = FakeNvml([FakeGpu(uuid=f"GPU-{i}") for i in range(4)], latency=1e-3).module()
        from tunetrack import Tracker
        tracker = Tracker(dir=sys.argv[1], system_interval=0.1).start()
        tracker.log({"x": 1.0})
        atexit.register(time.sleep, 0.5)  # runs before the tracker's exit hook, while passes go on
    """
    tests = os.path.dirname(__file__)
    proc = run_script(code, str(tmp_path), env={"PYTHONPATH": SRC + os.pathsep + tests})
    assert "Warning" not in proc.stderr, proc.stderr
    (run,) = list_runs(tmp_path)
    assert run.state == "finished" and "gpu.3.util" in run.system_keys()


def test_visible_devices_are_named_by_the_jobs_index(nvml, monkeypatch):
    nvml.gpus.append(FakeGpu(uuid="GPU-ccc", util=33))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,0")
    sample = NvidiaSource.create().sample()
    assert (sample["gpu.0.util"], sample["gpu.1.util"]) == (33, 11)
    assert "gpu.2.util" not in sample
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbb")
    assert NvidiaSource.create().sample()["gpu.0.util"] == 22
    assert visible_devices("1,7,0", 2) == [1]  # CUDA stops at the first invalid index
    assert visible_devices("", 4) == []


def test_unsupported_field_is_dropped_once_and_the_rest_goes_on(nvml, caplog):
    nvml.gpus[0].unsupported = {"nvmlDeviceGetPowerUsage", "nvmlGpmQueryDeviceSupport"}
    src = NvidiaSource.create()
    with caplog.at_level(logging.DEBUG, logger="tunetrack.system"):
        samples = [src.sample() for _ in range(3)]
    assert all("gpu.0.power_w" not in s and s["gpu.1.power_w"] == 300.0 for s in samples)
    assert all(s["gpu.0.util"] == 11 and "gpu.0.gpm.sm_active" not in s for s in samples)
    assert nvml.calls["nvmlDeviceGetPowerUsage"] == 1 + 3  # gpu 0 once, gpu 1 every time
    assert sum("power_w is unavailable" in r.getMessage() for r in caplog.records) == 1
    assert all(r.levelno == logging.DEBUG for r in caplog.records)


def test_gpu_lost_mid_run(nvml, caplog):
    src = NvidiaSource.create()
    src.sample()
    nvml.gpus[1].lost_after = nvml.device_calls[1]  # every further call to GPU 1 fails
    with caplog.at_level(logging.WARNING, logger="tunetrack.system"):
        after = [src.sample() for _ in range(3)]
    assert all("gpu.1.util" not in s and s["gpu.0.util"] == 11 for s in after)
    assert sum("GPU 1 was lost" in r.getMessage() for r in caplog.records) == 1


def test_no_nvml_or_no_driver_gives_none_and_one_info_line(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    with caplog.at_level(logging.INFO, logger="tunetrack.system"):
        assert NvidiaSource.create() is None
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([], init_error=True).module())
    with caplog.at_level(logging.INFO, logger="tunetrack.system"):
        assert NvidiaSource.create() is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and all(r.levelno == logging.INFO for r in caplog.records)


def test_host_source_is_real_and_cgroup_aware(tmp_path):
    plain = HostSource(tmp_path)
    plain.sample()
    sample = plain.sample()
    for key in (
        "cpu.percent",
        "proc.cpu_percent",
        "proc.rss_bytes",
        "mem.used_bytes",
        "mem.total_bytes",
        "mem.percent",
        "disk.used_percent",
        "net.sent_bytes_per_s",
        "net.recv_bytes_per_s",
    ):
        assert key in sample, key
    assert sample["proc.rss_bytes"] > 10 * 2**20
    cg = tmp_path / "cgroup"
    cg.mkdir()
    (cg / "cpu.max").write_text("150000 100000\n")
    (cg / "cpu.stat").write_text("usage_usec 1000\n")
    (cg / "memory.max").write_text(str(4 * 2**30))
    (cg / "memory.current").write_text(str(2**30))
    limited = HostSource(tmp_path, cgroup_root=cg)
    (cg / "cpu.stat").write_text("usage_usec 2000000000\n")
    s = limited.sample()
    assert s["cpu.limit"] == 1.5
    assert s["mem.total_bytes"] == 4 * 2**30 and s["mem.used_bytes"] == 2**30 and s["mem.percent"] == 25.0
    assert s["cpu.percent"] > 100  # the cgroup's usage counter jumped: reported against 1.5 CPUs


def test_allocator_source_reads_nothing_without_cuda():
    import torch

    assert not torch.cuda.is_initialized()
    assert TorchAllocatorSource().sample() == {}


def test_allocator_source_through_the_cuda_boundary(monkeypatch):
    import torch

    total = 80 * 2**30
    fake = {
        "is_initialized": lambda: True,
        "device_count": lambda: 1,
        "get_device_properties": lambda i: types.SimpleNamespace(total_memory=total),
        "memory_stats": lambda i: {"active_bytes.all.current": 4 * 2**30},
        "memory_allocated": lambda i: 8 * 2**30,
        "memory_reserved": lambda i: 16 * 2**30,
        "max_memory_allocated": lambda i: 12 * 2**30,
    }
    for name, fn in fake.items():
        monkeypatch.setattr(torch.cuda, name, fn)
    assert TorchAllocatorSource().sample() == {
        "gpu.0.memory.allocated": 10.0,
        "gpu.0.memory.reserved": 20.0,
        "gpu.0.memory.active": 5.0,
        "gpu.0.memory.peak_allocated_bytes": 12 * 2**30,
    }


def test_amd_source_through_a_fake_amdsmi(monkeypatch):
    smi = types.ModuleType("amdsmi")
    smi.amdsmi_init = lambda: None
    smi.amdsmi_shut_down = lambda: None
    smi.amdsmi_get_processor_handles = lambda: ["h0"]
    smi.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 90, "umc_activity": 40, "mm_activity": 0}
    smi.amdsmi_get_gpu_vram_usage = lambda h: {"vram_total": 1024, "vram_used": 256}
    smi.amdsmi_get_power_info = lambda h: {"current_socket_power": 250, "power_limit": 500}
    smi.AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0)
    smi.AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)

    def temp(h, kind, metric):
        raise RuntimeError("not supported on this board")

    smi.amdsmi_get_temp_metric = temp
    monkeypatch.setitem(sys.modules, "amdsmi", smi)
    sample = AmdSource.create().sample()
    assert sample == {
        "gpu.0.util": 90,
        "gpu.0.mem_util": 40,
        "gpu.0.memory.used_bytes": 256 * 2**20,
        "gpu.0.memory.total_bytes": 1024 * 2**20,
        "gpu.0.memory.percent": 25.0,
        "gpu.0.power_w": 250,
        "gpu.0.power_limit_w": 500,
    }


def test_tracker_records_system_metrics_apart_from_training(nvml, root):
    t = Tracker(dir=root, system_interval=0.1).start()
    for step in range(1, 6):
        t.log({"loss": 1.0 / step}, step=step)
    # three samples: each reads the utilization of both GPUs once (finish() waits for the last row)
    wait_until(lambda: nvml.calls.get("nvmlDeviceGetUtilizationRates", 0) >= 3 * 2)
    t.finish()
    run = open_run(t.id, dir=root)
    assert run.keys() == ["loss"]  # training metrics only
    keys = run.system_keys()
    assert {"gpu.0.util", "gpu.1.temp_c", "cpu.percent", "mem.used_bytes", "proc.rss_bytes"} <= set(keys)
    (node,) = run.nodes
    assert node.startswith("node0:")
    util = run.system_series("gpu.1.util")[node]
    assert len(util) >= 3 and set(util.values.tolist()) == {22}
    assert run.system_summary()[node]["gpu.0.util"] == 11


def test_system_metrics_off_by_argument_or_environment(root, monkeypatch):
    t = Tracker(dir=root, system=False).start()
    t.log({"x": 1.0})
    t.finish()
    assert open_run(t.id, dir=root).system_keys() == []
    monkeypatch.setenv("TUNETRACK_SYSTEM", "0")
    t = Tracker(dir=root).start()
    t.log({"x": 1.0})
    t.finish()
    assert open_run(t.id, dir=root).system_keys() == []


def test_a_failing_source_is_dropped_and_the_sampler_goes_on():
    class Broken:
        name = "broken"

        def sample(self):
            raise OSError("device vanished")

        def close(self): ...

    class Fine:
        name = "fine"

        def sample(self):
            return {"cpu.percent": 5.0}

        def close(self): ...

    rows = []
    sampler = SystemSampler([Broken(), Fine()], 0.1, lambda t, row: rows.append(row))
    with pytest.warns(UserWarning, match="device vanished"):
        assert sampler.sample_once() == {"cpu.percent": 5.0}
    assert [s.name for s in sampler.sources] == ["fine"]
