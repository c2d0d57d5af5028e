"""A TRL SFT script that knows nothing of tunetrack: record it with no change to its code.

    tunetrack run --project sft -- python examples/trl_sft_plain.py --output_dir out --max_steps 20 --use_cpu
    python examples/trl_sft_plain.py --output_dir out --max_steps 20 --use_cpu --report_to tunetrack

Its arguments are TRL's own (``SFTConfig``, parsed by ``TrlParser``), plus ``--step_seconds``: a pause
after each step, to watch a run live (or stop it) on a model this small.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _tiny import build_model, build_tokenizer  # noqa: E402


@dataclass
class ScriptArguments:
    step_seconds: float = 0.0


def main() -> None:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTConfig, SFTTrainer, TrlParser

    class Pause(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            time.sleep(script.step_seconds)

    script, config = TrlParser((ScriptArguments, SFTConfig)).parse_args_and_config()
    tok = build_tokenizer()
    data = Dataset.from_dict(
        {
            "messages": [
                [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
                for q, a in [("what is two plus two?", "four"), ("name a colour", "blue")] * 16
            ]
        }
    )
    trainer = SFTTrainer(
        model=build_model(tok),
        args=config,
        train_dataset=data,
        processing_class=tok,
        callbacks=[Pause()] if script.step_seconds else None,
    )
    trainer.train()


if __name__ == "__main__":
    main()
