"""What logging the loss every step costs a training loop that keeps a GPU busy (issue 14).

    python benchmarks/gpu_logging.py                 # on a GPU machine (bash scripts/gpu runs it)
    python benchmarks/gpu_logging.py --quick         # smaller and shorter; also the CPU smoke run
    python benchmarks/gpu_logging.py --device cpu    # CPU figures: NOT the claim (see below)

The loop: a small transformer (embedding, encoder layers, LM head) trained in bf16 autocast with
AdamW (fused on CUDA) and gradient clipping, on random token batches prepared on the host each step
(pinned, copied asynchronously), as a data loader would. Nothing in the step waits for the GPU (a
probe checks this under ``torch.cuda.set_sync_debug_mode("error")``), so the CPU queues kernels ahead
of the device. Every step then logs its loss, a 0-d CUDA tensor:

  none       nothing: the reference rate (run twice per repetition: the second is the noise floor)
  tunetrack  Tracker(system=False).log({"loss": loss}, step=i): the tensor as it is
  item       losses.append(loss.item()): the common hand-written pattern
  trackio    trackio.log({"loss": loss.item()}, step=i): trackio drops a tensor (it is not JSON
             serializable), so its users convert it
  wandb      run.log({"loss": loss}, step=i), offline: wandb converts the tensor (.cpu(), .item())

Peers run offline with their own system metrics off, as tunetrack's are. Every (variant,
repetition) is a fresh process; repetitions are interleaved and the order rotates, so drifts
(clocks, temperature) spread over all variants. Figure: steps per second over the timed steps
(from a device synchronize to a device synchronize); the ratio to "none" is the median of the
per-repetition ratios. Claim: tunetrack >= 0.99 of the no-logging rate.

The system pass: the same loop logging through tunetrack with system metrics every 1 s and without
(paired runs in alternating order, as in benchmarks/system_overhead.py; and one run whose sources are
switched on and off in blocks through ``Tracker(system_sources=...)``), target: step time with them
within 1%. Plus what one sampling pass of the default sources costs on this machine.

Without CUDA (or with --device cpu) it runs the same code on CPU and says so: nothing runs
asynchronously on a CPU, so a synchronizing tracker has no pipeline to stall and the ratios only show
host overhead. They are not the claim. Nothing is asserted; results also go to --out as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
VARIANTS = ("none", "tunetrack", "item", "trackio", "wandb")
HOW = {
    "none": "nothing",
    "tunetrack": 'Tracker(system=False).log({"loss": loss}, step=i)',
    "item": "losses.append(loss.item())",
    "trackio": 'trackio.log({"loss": loss.item()}, step=i)',
    "wandb": 'run.log({"loss": loss}, step=i), offline',
    "none2": "nothing, again (the noise floor)",
}
MODULES = {"trackio": "trackio", "wandb": "wandb", "tunetrack": "tunetrack"}
INTERVAL = 1.0  # system metrics interval in the system pass, seconds
TARGET_LOG = 0.99  # tunetrack's rate / the no-logging rate
TARGET_SYSTEM = 1.01  # step time with system metrics / without
#: (vocabulary, width, layers, heads, batch, sequence length)
SIZES = {
    "full": (8192, 1024, 4, 16, 16, 512),
    "quick": (8192, 512, 2, 8, 8, 256),
    "cpu": (256, 64, 1, 4, 4, 32),
}


# == worker side: one variant in this (fresh) process ================================================
class Workload:
    """The training step. ``step()`` queues one step and returns the loss as a 0-d tensor."""

    def __init__(self, device: str, size: str) -> None:
        import torch
        from torch import nn

        self.torch, self.device = torch, device
        if device == "cpu":
            torch.set_num_threads(1)  # modest on shared CPU machines; the CPU figures are not the claim
        vocab, width, layers, heads, self.batch, self.seq = SIZES[size]
        self.vocab = vocab
        torch.manual_seed(0)

        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embed = nn.Embedding(vocab, width)
                self.blocks = nn.ModuleList(
                    nn.TransformerEncoderLayer(
                        width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True
                    )
                    for _ in range(layers)
                )
                self.head = nn.Linear(width, vocab)

            def forward(self, ids: Any) -> Any:
                x = self.embed(ids)
                for block in self.blocks:
                    x = block(x)
                return self.head(x)

        self.model = Net().to(device)
        cuda = device == "cuda"
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, fused=cuda)
        self.params = list(self.model.parameters())

    def step(self) -> Any:
        torch = self.torch
        ids = torch.randint(self.vocab, (self.batch, self.seq + 1))  # the host's part: a data loader's
        if self.device == "cuda":
            ids = ids.pin_memory().to(self.device, non_blocking=True)
        with torch.autocast(self.device, dtype=torch.bfloat16):
            logits = self.model(ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, self.vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss.detach()

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()


def make_logger(variant: str, tmp: Path) -> tuple[Any, Any, Any]:
    """(log(loss, step), finish(), recorded() -> points read back or None) for one variant."""
    if variant in ("none", "none2"):
        return (lambda loss, i: None), (lambda: None), (lambda: None)
    if variant == "tunetrack":
        from tunetrack import Tracker, open_run

        tracker = Tracker(project="gpu-bench", name="gpu-bench", dir=tmp / "tunetrack", system=False).start()
        log = tracker.log

        def recorded() -> int:
            return len(open_run(tracker.id, dir=tmp / "tunetrack").series("loss"))

        return (lambda loss, i: log({"loss": loss}, step=i)), tracker.finish, recorded
    if variant == "item":
        losses: list[float] = []
        return (lambda loss, i: losses.append(loss.item())), (lambda: None), (lambda: len(losses))
    if variant == "trackio":
        import inspect

        import trackio

        off = {
            k: False
            for k in ("auto_log_cpu", "auto_log_gpu")
            if k in inspect.signature(trackio.init).parameters
        }
        trackio.init(project="gpu-bench", name="gpu-bench", **off)
        tlog = trackio.log
        return (lambda loss, i: tlog({"loss": loss.item()}, step=i)), trackio.finish, (lambda: None)
    if variant == "wandb":
        import wandb

        try:
            settings = wandb.Settings(x_disable_stats=True)
        except Exception:  # an older wandb without that setting: its defaults
            settings = None
        run = wandb.init(
            project="gpu-bench", name="gpu-bench", dir=str(tmp), mode="offline", settings=settings
        )
        wlog = run.log
        return (lambda loss, i: wlog({"loss": loss}, step=i)), run.finish, (lambda: None)
    raise ValueError(variant)


def timed(work: Workload, log: Any, steps: int, first: int) -> float:
    """Seconds for ``steps`` logged steps, from a device synchronize to a device synchronize."""
    work.sync()
    start = time.perf_counter()
    for i in range(first, first + steps):
        log(work.step(), i)
    work.sync()
    return time.perf_counter() - start


def worker_probe(spec: dict[str, Any]) -> dict[str, Any]:
    """The device, whether the step itself ever synchronizes, its host and device time, its rate."""
    work = Workload(spec["device"], spec["size"])
    torch = work.torch
    for _ in range(5):
        work.step()
    out: dict[str, Any] = {"torch": torch.__version__, "torch_cuda": torch.version.cuda}
    if work.device == "cuda":
        out["device"] = torch.cuda.get_device_name(0)
        out["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
        work.sync()
        torch.cuda.set_sync_debug_mode("error")
        try:
            for _ in range(3):
                work.step()
            out["step_synchronizes"] = None
        except RuntimeError as exc:
            out["step_synchronizes"] = str(exc)[:200]
        finally:
            torch.cuda.set_sync_debug_mode("default")
    issue, whole = [], []
    for _ in range(10):  # an empty queue each time: the host's own time to issue one step
        work.sync()
        start = time.perf_counter()
        work.step()
        issued = time.perf_counter()
        work.sync()
        issue.append(issued - start)
        whole.append(time.perf_counter() - start)
    seconds = timed(work, lambda loss, i: None, 20, 0)
    out.update(
        host_issue_ms=statistics.median(issue) * 1e3,
        alone_ms=statistics.median(whole) * 1e3,
        queued_ms=seconds / 20 * 1e3,
    )
    return out


def worker_log(spec: dict[str, Any]) -> dict[str, Any]:
    tmp = Path(spec["tmp"])
    work = Workload(spec["device"], spec["size"])
    log, finish, recorded = make_logger(spec["variant"], tmp)
    warmup = spec["warmup"]
    for i in range(warmup):  # the logger warms up too (first-call costs, its threads)
        log(work.step(), i)
    seconds = timed(work, log, spec["steps"], warmup)
    finish()
    return {"steps_per_s": spec["steps"] / seconds, "recorded": recorded(), "logged": warmup + spec["steps"]}


def worker_system(spec: dict[str, Any]) -> dict[str, Any]:
    """tunetrack logging every step, system metrics every second: on/off for the whole run
    (``mode: on|off``), or switched on and off in blocks of steps (``mode: switched``)."""
    from system_overhead import Gated

    from tunetrack import Tracker
    from tunetrack.system import SystemSampler, default_sources

    tmp, mode = Path(spec["tmp"]), spec["mode"]
    work = Workload(spec["device"], spec["size"])
    work.step()  # CUDA is initialized before the sources are made, as in a training script
    switch = threading.Event()
    kwargs: dict[str, Any] = {"system": mode != "off", "system_interval": INTERVAL}
    if mode == "switched":
        kwargs["system_sources"] = [Gated(source, switch) for source in default_sources()]
    else:
        switch.set()
    tracker = Tracker(project="gpu-bench", dir=tmp / "tunetrack", **kwargs).start()
    log = tracker.log

    def logged(loss: Any, i: int) -> None:
        log({"loss": loss}, step=i)

    for i in range(spec["warmup"]):
        logged(work.step(), i)
    out: dict[str, Any] = {}
    if mode == "switched":
        blocks, first = [], spec["warmup"]
        for b in range(spec["blocks"]):
            on = b % 2 == 1
            switch.set() if on else switch.clear()
            seconds = timed(work, logged, spec["steps"], first)
            first += spec["steps"]
            blocks.append((on, seconds / spec["steps"]))
        out["blocks"] = blocks
    else:
        out["step_s"] = timed(work, logged, spec["steps"], spec["warmup"]) / spec["steps"]
    tracker.finish()
    if mode == "switched":  # then what one pass of the default sources costs here (CUDA in use)
        sampler = SystemSampler(default_sources(), INTERVAL, sink=lambda t, row: None)
        walls: list[float] = []
        cpus: list[float] = []

        def passes() -> None:
            sampler.sample_once()
            for _ in range(spec["passes"]):
                cpu, wall = time.thread_time(), time.perf_counter()
                sampler.sample_once()
                walls.append(time.perf_counter() - wall)
                cpus.append(time.thread_time() - cpu)
                time.sleep(0.01)

        thread = threading.Thread(target=passes)
        thread.start()
        thread.join()
        for source in sampler.sources:
            source.close()
        out["pass"] = {
            "sources": [s.name for s in sampler.sources],
            "wall_ms": statistics.median(walls) * 1e3,
            "cpu_ms": statistics.median(cpus) * 1e3,
        }
    return out


WORKERS = {"probe": worker_probe, "log": worker_log, "system": worker_system}


# == orchestrator side ==============================================================================
def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_worker(kind: str, spec: dict[str, Any]) -> dict[str, Any] | str:
    """One worker in a fresh process, offline, in its own folder; its result, or 'error: ...'.
    A worker that hangs is stopped at the deadline (or after 10 minutes)."""
    from run_all import library_env

    timeout = max(30.0, min(600.0, deadline() - time.time()))

    tmp = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=spec["base"]))
    out_path, log_path = tmp / "out.json", tmp / "log.txt"
    spec_path = tmp / "spec.json"
    spec_path.write_text(json.dumps({**spec, "tmp": str(tmp)}))
    env = library_env(tmp)
    env.pop("TUNETRACK_SYSTEM", None)  # the system pass decides
    if env.get("PYTHONPATH"):  # the worker runs in its own folder: relative entries would break
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    with open(log_path, "w") as log:
        try:
            code: int | None = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--worker",
                    kind,
                    str(spec_path),
                    str(out_path),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=tmp,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
    try:
        if code == 0 and out_path.exists():
            return json.loads(out_path.read_text())
        lines = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
        reason = "timed out" if code is None else (lines[-1].strip() if lines else f"exit code {code}")
        return f"error: {reason[:200]}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def installed(variant: str) -> bool:
    module = MODULES.get(variant)
    return module is None or importlib.util.find_spec(module) is not None


def version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def device_info() -> dict[str, Any]:
    """The driver and CUDA versions through NVML (this process never initializes CUDA)."""
    info: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        import pynvml

        pynvml.nvmlInit()
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            info["driver"] = driver.decode() if isinstance(driver, bytes) else driver
            cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
            info["driver_cuda"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
            info["gpus"] = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    return info


def deadline() -> float:
    """The time by which everything must have ended: TUNETRACK_GPU_DEADLINE (unix seconds, set by
    scripts/gpu for the device call's limit), or none."""
    with contextlib.suppress(KeyError, ValueError):
        return float(os.environ["TUNETRACK_GPU_DEADLINE"]) - 15.0
    return float("inf")


def median_ratio(a: list[float], b: list[float]) -> tuple[float, list[float]]:
    ratios = [x / y for x, y in zip(a, b)]
    return statistics.median(ratios), ratios


def logging_pass(plan: dict[str, Any], base: Path, until: float) -> dict[str, Any]:
    variants = [v for v in plan["variants"] if installed(v)]
    absent = [v for v in plan["variants"] if not installed(v)]
    order = ["none", *[v for v in variants if v != "none"], "none2"]
    rates: dict[str, list[float]] = {v: [] for v in order}
    errors: dict[str, str] = {}
    recorded: dict[str, Any] = {}
    slowest, reps_done = 0.0, 0
    for rep in range(plan["reps"]):
        if rep >= 2 and time.time() + slowest * len(order) > until:
            progress(f"  stopping after {rep} repetitions: the deadline is near")
            break
        shift = rep % len(order)
        for variant in order[shift:] + order[:shift]:
            began = time.time()
            spec = {**plan["spec"], "base": str(base), "variant": variant}
            got = run_worker("log", spec)
            slowest = max(slowest, time.time() - began)
            if isinstance(got, str):
                errors[variant] = got
                progress(f"  rep {rep + 1} {variant}: {got}")
                continue
            rates[variant].append(got["steps_per_s"])
            recorded[variant] = (got["recorded"], got["logged"])
            progress(f"  rep {rep + 1} {variant}: {got['steps_per_s']:.2f} steps/s")
        reps_done = rep + 1
    return {"rates": rates, "errors": errors, "absent": absent, "recorded": recorded, "reps": reps_done}


def system_pass(plan: dict[str, Any], base: Path, until: float) -> dict[str, Any]:
    spec = {**plan["spec"], "base": str(base), "steps": plan["sys_steps"]}
    medians: dict[str, list[float]] = {"off": [], "on": []}
    errors: list[str] = []
    slowest = 0.0
    for pair in range(plan["pairs"]):
        if pair >= 1 and time.time() + 3 * slowest > until:
            progress(f"  stopping after {pair} pairs: the deadline is near")
            break
        done = {}
        for mode in ("off", "on") if pair % 2 == 0 else ("on", "off"):
            began = time.time()
            got = run_worker("system", {**spec, "mode": mode})
            slowest = max(slowest, time.time() - began)
            if isinstance(got, str):
                errors.append(f"{mode}: {got}")
                progress(f"  pair {pair + 1} {mode}: {got}")
                break
            done[mode] = got["step_s"]
            progress(f"  pair {pair + 1} {mode}: {got['step_s'] * 1e3:.3f} ms/step")
        if len(done) == 2:
            medians["off"].append(done["off"])
            medians["on"].append(done["on"])
    switched: dict[str, Any] | str = "not run: the deadline is near"
    if time.time() + 2 * slowest < until:
        switched = run_worker(
            "system",
            {
                **spec,
                "mode": "switched",
                "steps": plan["block_steps"],
                "blocks": plan["blocks"],
                "passes": 50,
            },
        )
        progress(f"  switched run: {'done' if isinstance(switched, dict) else switched}")
    return {"paired": medians, "errors": errors, "switched": switched}


def plan_for(opts: argparse.Namespace, device: str, probe: dict[str, Any]) -> dict[str, Any]:
    """Step counts from the probe's rate, so every timed window lasts about as long on any device."""
    rate = 1e3 / probe["queued_ms"]
    quick = opts.quick
    window, sys_window, block = (1.0, 2.5, 0.8) if quick else (3.0, 5.0, 2.0)
    size = "cpu" if device == "cpu" else ("quick" if quick else "full")
    return {
        "variants": [v for v in opts.variants if v in VARIANTS],
        "reps": opts.reps or (2 if quick else 3),
        "pairs": opts.pairs or (1 if quick else 3),
        "blocks": 4 if quick else 8,
        "sys_steps": max(10, round(rate * sys_window)),
        "block_steps": max(5, round(rate * block)),
        "spec": {
            "device": device,
            "size": size,
            "warmup": max(5, round(rate * 0.3)),
            "steps": max(10, round(rate * window)),
        },
    }


def _label(met: bool, cpu: bool) -> str:
    return "cpu   " if cpu else ("met   " if met else "MISSED")


def report(
    meta: dict[str, Any], logging: dict[str, Any] | None, system: dict[str, Any] | None
) -> dict[str, Any]:
    cpu = meta["device"] == "cpu"
    verdicts: dict[str, Any] = {"claim": not cpu}  # CPU figures decide nothing: every "met" is None
    where = meta.get("gpu_name") or "CPU"
    if cpu:
        print("\n" + "!" * 100)
        print(
            "CPU FIGURES, NOT THE CLAIM: no GPU here. On a CPU every operation runs before the call returns,"
        )
        print("so a synchronizing tracker has no queue to drain: these ratios show only host overhead.")
        print("!" * 100)
    if logging is not None:
        rates, reps = logging["rates"], logging["reps"]
        ref = rates.get("none", [])
        print(
            f"\n== logging the loss every step: steps/s, median of {reps} fresh processes per variant ({where}) =="
        )
        header = f"{'variant':<10} {'how it logs':<52} {'steps/s':>9} {'ratio':>7}  {'per repetition':<28} recorded"
        print(header)
        print("-" * len(header))
        for variant in ["none", *[v for v in logging["rates"] if v not in ("none", "none2")], "none2"]:
            got = rates.get(variant) or []
            if variant in logging["errors"] and not got:
                print(f"{variant:<10} {HOW[variant]:<52} {logging['errors'][variant]}")
                continue
            if not got:
                continue
            n = min(len(got), len(ref))
            ratio, each = median_ratio(got[:n], ref[:n]) if n else (float("nan"), [])
            rec = logging["recorded"].get(variant)
            rec_text = "-" if not rec or rec[0] is None else f"{rec[0]}/{rec[1]}"
            each_text = " ".join(f"{r:.3f}" for r in each)
            print(
                f"{variant:<10} {HOW[variant]:<52} {statistics.median(got):>9.2f} {ratio:>7.3f}  {each_text:<28} {rec_text}"
            )
            verdicts.setdefault("logging", {})[variant] = {
                "steps_per_s": statistics.median(got),
                "ratio": ratio,
                "ratios": each,
                "rates": got,
            }
        for variant in logging["absent"]:
            print(f"{variant:<10} {HOW[variant]:<52} not installed")
        tt = verdicts.get("logging", {}).get("tunetrack")
        floor = verdicts.get("logging", {}).get("none2")
        if floor:
            spread = max(abs(r - 1) for r in floor["ratios"]) if floor["ratios"] else float("nan")
            each = " ".join(f"{r:.3f}" for r in floor["ratios"])
            print(f"noise floor: none run twice per repetition, ratios {each} (±{spread:.3f})")
        if tt:
            met = tt["ratio"] >= TARGET_LOG
            label = _label(met, cpu)
            print(
                f"{label} tunetrack {tt['ratio']:.3f} of the no-logging rate (target ≥ {TARGET_LOG})"
                + (" [CPU: not the claim]" if cpu else "")
            )
            verdicts["tunetrack_ratio_met"] = None if cpu else met
        for variant in ("item", "trackio", "wandb"):
            got = verdicts.get("logging", {}).get(variant)
            if got and tt:
                print(
                    f"       {variant}: {got['ratio']:.3f} of the no-logging rate ({got['ratio'] / tt['ratio']:.3f} of tunetrack's)"
                )
    if system is not None:
        print(f"\n== system metrics every {INTERVAL:g} s vs off, tunetrack logging every step ({where}) ==")
        paired = system["paired"]
        if paired["on"]:
            ratio, each = median_ratio(paired["on"], paired["off"])
            label = _label(ratio <= TARGET_SYSTEM, cpu)
            print(
                f"  paired runs (alternating order), step time on/off: {' '.join(f'{r:.4f}' for r in each)}"
            )
            print(f"  {label} median ratio {ratio:.4f} (target ≤ {TARGET_SYSTEM})")
            met = None if cpu else ratio <= TARGET_SYSTEM
            verdicts["system_paired"] = {"ratio": ratio, "ratios": each, "met": met}
        for error in system["errors"]:
            print(f"  paired run failed: {error}")
        switched = system["switched"]
        if isinstance(switched, dict):
            on = [t for s, t in switched["blocks"] if s]
            off = [t for s, t in switched["blocks"] if not s]
            ratio = statistics.median(on) / statistics.median(off)
            label = _label(ratio <= TARGET_SYSTEM, cpu)
            print(
                f"  switched run ({len(switched['blocks'])} blocks): median step time on {statistics.median(on) * 1e3:.3f} ms, "
                f"off {statistics.median(off) * 1e3:.3f} ms"
            )
            print(f"  {label} ratio {ratio:.4f} (target ≤ {TARGET_SYSTEM})")
            p = switched["pass"]
            print(
                f"  one pass of the default sources ({', '.join(p['sources'])}): wall {p['wall_ms']:.2f} ms, "
                f"sampler-thread CPU {p['cpu_ms']:.2f} ms (median of 50)"
            )
            met = None if cpu else ratio <= TARGET_SYSTEM
            verdicts["system_switched"] = {"ratio": ratio, "met": met, "pass": p}
        else:
            print(f"  switched run: {switched}")
    if cpu:
        print("\n(CPU figures: not the claim. Run on a GPU machine: bash scripts/gpu)")
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller model, shorter windows, fewer repetitions"
    )
    parser.add_argument(
        "--device", choices=("auto", "cuda", "cpu"), default="auto", help="auto: cuda if available"
    )
    parser.add_argument("--reps", type=int, help="repetitions of the logging pass (default 3; quick 2)")
    parser.add_argument("--pairs", type=int, help="pairs of runs in the system pass (default 3; quick 1)")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma-separated, from {','.join(VARIANTS)} (none is always run)",
    )
    parser.add_argument("--no-system", action="store_true", help="skip the system-metrics pass")
    parser.add_argument(
        "--out", type=Path, default=HERE / "results" / "gpu_logging.json", help="the JSON results"
    )
    parser.add_argument("--worker", nargs=3, metavar=("KIND", "SPEC", "OUT"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        kind, spec_path, out_path = opts.worker
        result = WORKERS[kind](json.loads(Path(spec_path).read_text()))
        Path(out_path).write_text(json.dumps(result))
        return
    opts.variants = [
        "none",
        *[v.strip() for v in opts.variants.split(",") if v.strip() and v.strip() != "none"],
    ]
    unknown = sorted(set(opts.variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant {', '.join(unknown)} (choose from {', '.join(VARIANTS)})")

    import torch  # only to ask whether CUDA exists: this process never initializes it

    device = opts.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch.cuda.is_available() is False here")
    until = deadline()
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    base = Path(tempfile.mkdtemp(prefix="tunetrack-gpu-bench-"))
    meta: dict[str, Any] = {
        "started": started,
        "device": device,
        "quick": opts.quick,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        **device_info(),
        "versions": {
            d: version(d) for d in ("torch", "tunetrack", "trackio", "wandb", "nvidia-ml-py") if version(d)
        },
    }
    logging = system = None
    try:
        progress(f"probe ({device}):")
        probe = run_worker(
            "probe",
            {
                "base": str(base),
                "device": device,
                "size": "cpu" if device == "cpu" else ("quick" if opts.quick else "full"),
            },
        )
        if isinstance(probe, str):
            raise SystemExit(f"gpu_logging: the probe failed: {probe}")
        meta["probe"] = probe
        meta["gpu_name"] = probe.get("device")
        print(
            f"device: {probe.get('device', 'CPU')}"
            + (f", driver {meta.get('driver')} (CUDA {meta.get('driver_cuda')})" if device == "cuda" else "")
            + f"; torch {probe['torch']} (CUDA {probe['torch_cuda']}); Python {meta['machine']['python']}; "
            + f"{meta['machine']['cpus']} CPUs; {started}"
        )
        print(
            f"one step: the host issues it in {probe['host_issue_ms']:.2f} ms; alone it takes {probe['alone_ms']:.2f} ms; "
            f"queued back to back {probe['queued_ms']:.2f} ms"
        )
        if device == "cuda":
            if probe.get("step_synchronizes"):
                print(
                    f"WARNING: the training step itself synchronizes ({probe['step_synchronizes']}): not a valid workload"
                )
            else:
                print('the step never synchronizes (checked under torch.cuda.set_sync_debug_mode("error"))')
            ahead = probe["host_issue_ms"] < probe["queued_ms"]
            print(
                "the CPU runs ahead of the GPU (the host needs less time per step than the device)"
                if ahead
                else "WARNING: the host needs as long as the device per step: the loop is CPU-bound, not GPU-bound"
            )
        plan = plan_for(opts, device, probe)
        meta["plan"] = plan
        budget = until - time.time()
        log_until = time.time() + (budget * 0.6 if not opts.no_system else budget)
        progress("logging pass:")
        logging = logging_pass(plan, base, min(log_until, until))
        if not opts.no_system:
            progress("system pass:")
            system = system_pass(plan, base, until)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    verdicts = report(meta, logging, system)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"meta": meta, "logging": logging, "system": system, "verdicts": verdicts}
    opts.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"results: {opts.out}")
    print(
        "JSON: "
        + json.dumps(
            {
                "meta": {k: meta[k] for k in ("device", "gpu_name", "driver", "driver_cuda") if k in meta},
                "verdicts": verdicts,
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
