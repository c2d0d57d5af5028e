"""The runs a new user has, recorded as a user records them: the documented one-line callback
(``TunetrackCallback(project=...)``, nothing else configured, the store from ``TUNETRACK_DIR``), real
tiny models trained on CPU, each job its own process (console captured, system metrics on, the run
ended by the process's exit as a user's script ends it).

- ``grpo/grpo-digit``: TRL's GRPOTrainer, two reward functions (``has_digit``, ``short``) weighed
  1 and 0.5, completions logged (``log_completions=True``), a checkpoint every 3 steps;
- ``grpo/grpo-nolog``: the same with TRL's default ``log_completions=False``;
- ``sft-sweep``: SFTTrainer + LoRA (q, v), lr in {3e-3, 3e-2} x r in {4, 16} x seed in {0, 1}, an
  evaluation every 4 steps (``eval_loss``), named ``sft-lr<lr>-r<r>-s<seed>``;
- ``crashes/crash-cuda``: a Trainer whose callback prints progress, then raises PyTorch's real
  four-line CUDA error at step 3;
- ``crashes/sigkill-loop``: a ``Tracker`` loop printing progress, killed with SIGKILL from outside.

``python tests/e2e/hf/real_runs.py STORE`` records them all (about a minute and a half on two cores);
the end-to-end tests of what users read back (``test_real_runs.py``) use it as a fixture.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[2] / "examples"
LRS = (3e-3, 3e-2)
RANKS = (4, 16)
SEEDS = (0, 1)
SWEEP = [(lr, r, seed) for lr in LRS for r in RANKS for seed in SEEDS]
#: PyTorch's own message for an illegal memory access (c10/cuda/CUDAException.cpp)
CUDA_ERROR = (
    "CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
COMMON = dict(
    per_device_train_batch_size=4,
    logging_steps=1,
    report_to="none",
    save_strategy="no",
    use_cpu=True,
    disable_tqdm=True,
)


def has_digit(completions, **kwargs):
    return [float(any(c.isdigit() for c in text)) for text in completions]


def short(completions, **kwargs):
    return [1.0 if len(text) <= 12 else -0.5 for text in completions]


def grpo(out: str, name: str, steps: int, log_completions: bool) -> None:
    from _tiny import build_model, build_tokenizer
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from tunetrack.integrations.transformers import TunetrackCallback

    tok = build_tokenizer()
    prompts = Dataset.from_dict(
        {"prompt": ["say a number:", "write a short poem about the sea", "two plus two is", "count:"] * 4}
    )
    options = dict(log_completions=True) if log_completions else {}  # else TRL's default (False)
    args = GRPOConfig(
        output_dir=out,
        run_name=name,
        max_steps=steps,
        num_generations=4,
        max_completion_length=8,
        generation_batch_size=4,
        learning_rate=1e-3,
        reward_weights=[1.0, 0.5],
        **options,
        **{**COMMON, "save_strategy": "steps", "save_steps": 3, "save_total_limit": 1},
    )
    GRPOTrainer(
        model=build_model(tok),
        reward_funcs=[has_digit, short],
        processing_class=tok,
        train_dataset=prompts,
        args=args,
        callbacks=[TunetrackCallback(project="grpo", name=name)],
    ).train()


def sft(out: str, lr: float, r: int, seed: int) -> None:
    from _tiny import LINES, build_model, build_tokenizer
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    from tunetrack.integrations.transformers import TunetrackCallback

    name = f"sft-lr{lr}-r{r}-s{seed}"
    tok = build_tokenizer()
    SFTTrainer(
        model=build_model(tok, seed=seed),
        processing_class=tok,
        train_dataset=Dataset.from_dict({"text": LINES[:48]}),
        eval_dataset=Dataset.from_dict({"text": LINES[48:56]}),
        peft_config=LoraConfig(
            r=r, lora_alpha=2 * r, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"
        ),
        args=SFTConfig(
            output_dir=out,
            run_name=name,
            max_steps=8,
            max_length=32,
            learning_rate=lr,
            seed=seed,
            eval_strategy="steps",
            eval_steps=4,
            **{**COMMON, "save_strategy": "steps", "save_steps": 4, "save_total_limit": 1},
        ),
        callbacks=[TunetrackCallback(project="sft-sweep", name=name)],
    ).train()


def crash(out: str) -> None:
    from _tiny import build_dataset, build_model, build_tokenizer
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from tunetrack.integrations.transformers import TunetrackCallback

    class Risky(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            print(f"step {state.global_step}: all good so far", flush=True)
            if state.global_step == 3:
                print("about to do something risky on the GPU...", flush=True)
                raise RuntimeError(CUDA_ERROR)

    tok = build_tokenizer()
    Trainer(
        model=build_model(tok),
        args=TrainingArguments(output_dir=out, max_steps=10, learning_rate=1e-3, **COMMON),
        train_dataset=build_dataset(tok, rows=48),
        callbacks=[TunetrackCallback(project="crashes", name="crash-cuda"), Risky()],
    ).train()


def loop() -> None:
    from tunetrack import Tracker

    run = Tracker(project="crashes", name="sigkill-loop", config={"lr": 1e-3}).start()
    for step in range(1, 100_000):
        run.log({"loss": 2.0 / step**0.5, "lr": 1e-3}, step=step)
        if step % 10 == 0:
            print(f"step {step} loss {2.0 / step**0.5:.4f}", flush=True)
        time.sleep(0.01)


def job(*args: str) -> subprocess.Popen:
    """One user job: this script in a process of its own, recording into ``TUNETRACK_DIR``."""
    return subprocess.Popen([sys.executable, __file__, *args], env=os.environ.copy())


def record(store: Path, work: Path) -> None:
    """Record every run into ``store``, one job at a time (``work`` holds the trainers' output folders)."""
    os.environ["TUNETRACK_DIR"] = str(store)
    jobs = [
        ("grpo", str(work / "grpo-digit"), "grpo-digit", "6", "1"),
        ("grpo", str(work / "grpo-nolog"), "grpo-nolog", "2", "0"),
        *(
            ("sft", str(work / f"sft-{i}"), str(lr), str(r), str(seed))
            for i, (lr, r, seed) in enumerate(SWEEP)
        ),
        ("crash", str(work / "crash")),
    ]
    for args in jobs:
        code = job(*args).wait()
        if code != (1 if args[0] == "crash" else 0):
            raise SystemExit(f"real_runs: job {args} exited with {code}")
    killed = job("loop")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _printed(store, "step 200 "):
        time.sleep(0.2)
    killed.send_signal(signal.SIGKILL)
    killed.wait()


def _printed(store: Path, text: str) -> bool:
    """Whether the killed loop's console already holds ``text`` (its recorder has written it)."""
    from tunetrack.errors import TunetrackError
    from tunetrack.reader import open_run

    try:
        return any(text in line.text for line in open_run("sigkill-loop", dir=store).console())
    except TunetrackError:
        return False


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(EXAMPLES))
    what, *rest = argv
    if what == "grpo":
        grpo(rest[0], rest[1], int(rest[2]), rest[3] == "1")
    elif what == "sft":
        sft(rest[0], float(rest[1]), int(rest[2]), int(rest[3]))
    elif what == "crash":
        crash(rest[0])
    elif what == "loop":
        loop()
    else:
        import tempfile

        with tempfile.TemporaryDirectory() as work:
            record(Path(what).resolve(), Path(work))


if __name__ == "__main__":
    main(sys.argv[1:])
