"""TRL's GRPOTrainer with the tunetrack callback: rewards, completions as text samples, all offline.

python examples/trl_grpo.py [--steps 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _tiny import build_model, build_tokenizer  # noqa: E402


def length_reward(completions, **kwargs):
    """Prefer completions of about ten characters."""
    return [-abs(len(c) - 10) / 10 for c in completions]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dir", default=None)
    opts = parser.parse_args()

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from tunetrack.integrations.transformers import TunetrackCallback

    tok = build_tokenizer()
    prompts = Dataset.from_dict(
        {"prompt": ["the quick brown", "what is two", "a tracker records", "fine-tuning a"] * 4}
    )
    callback = TunetrackCallback(project="trl-grpo", name="grpo-example", dir=opts.dir)
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            max_steps=opts.steps,
            num_generations=4,
            max_completion_length=8,
            generation_batch_size=4,
            per_device_train_batch_size=4,
            logging_steps=1,
            log_completions=True,
            report_to="none",
            save_strategy="no",
            use_cpu=True,
            disable_tqdm=True,
        )
        GRPOTrainer(
            model=build_model(tok),
            reward_funcs=length_reward,
            processing_class=tok,
            train_dataset=prompts,
            args=args,
            callbacks=[callback],
        ).train()
    callback.finish()
    print(f"run {callback.tracker.id} recorded in {callback.tracker.run_dir}")


if __name__ == "__main__":
    main()
