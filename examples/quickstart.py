"""The main job: train a tiny Llama with the Transformers Trainer while tunetrack records it.

    python examples/quickstart.py [--steps 30]

Runs offline on a CPU in well under a minute. The run lands in ./tunetrack_runs (or $TUNETRACK_DIR);
look at it with `tunetrack ls` and `tunetrack show <id>`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # everything is built locally: never reach for the hub
sys.path.insert(0, str(Path(__file__).parent))
from _tiny import build_dataset, build_model, build_tokenizer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--project", default="quickstart")
    opts = parser.parse_args()

    from transformers import Trainer, TrainingArguments

    from tunetrack.integrations.transformers import TunetrackCallback

    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    callback = TunetrackCallback(project=opts.project, tags=["example"])
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            max_steps=opts.steps,
            per_device_train_batch_size=4,
            logging_steps=1,
            eval_strategy="steps",
            eval_steps=10,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            learning_rate=1e-3,
            disable_tqdm=True,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=build_dataset(tokenizer),
            eval_dataset=build_dataset(tokenizer, rows=16),
            callbacks=[callback],
        )
        trainer.train()
        trainer.evaluate()  # after training: lands in the same run
    callback.finish()
    tracker = callback.tracker
    print(f"\nrun {tracker.id} recorded in {tracker.run_dir}")
    print(f"see it with: tunetrack show {tracker.id} --dir {tracker.run_dir.parent}")


if __name__ == "__main__":
    main()
