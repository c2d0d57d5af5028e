"""Build everything a tiny offline torchtune run needs into one folder, and write its YAML configs.

    python examples/torchtune/prepare.py OUT_DIR
    tune run full_finetune_single_device --config OUT_DIR/tiny_full.yaml \\
        metric_logger._component_=tunetrack.integrations.torchtune.TunetrackLogger metric_logger.project=tt
    tunetrack ls --dir OUT_DIR/out_full/logs      # the run, stored under the config's log_dir

A SentencePiece tokenizer trained on local text (``OUT_DIR/art/tok.model``), a random two-layer Llama
checkpoint in Hugging Face format (``OUT_DIR/art/model``), and 64 alpaca-style records
(``OUT_DIR/art/data.json``), plus ``tiny_full.yaml`` and ``tiny_lora.yaml`` pointing at them: no hub,
no GPU. Each recipe trains 8 steps on CPU in about 20 s.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINES = [
    "below is an instruction that describes a task. write a response that appropriately completes the request.",
    "### instruction: ### input: ### response:",
    "the quick brown fox jumps over the lazy dog",
    "what is two plus two? two plus two is four",
    "name three colors. red, green and blue.",
] * 40


def prepare(out: Path) -> dict[str, Path]:
    """Write the artifacts and the two configs into ``out``; returns ``{"tiny_full": path, "tiny_lora": path}``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here needs the hub; do not wait for it
    import sentencepiece as spm
    from transformers import LlamaConfig, LlamaForCausalLM

    art = out / "art"
    art.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES),
        model_prefix=str(art / "tok"),
        vocab_size=200,
        model_type="bpe",
        character_coverage=1.0,
        hard_vocab_limit=False,
        bos_id=1,
        eos_id=2,
        unk_id=0,
        pad_id=-1,
        minloglevel=2,
    )
    config = LlamaConfig(
        vocab_size=200,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
    )
    LlamaForCausalLM(config).save_pretrained(art / "model")
    records = [
        {"instruction": f"say {w}", "input": "", "output": f"{w} {w}"}
        for w in ("red", "green", "blue", "four", "fox", "dog", "two", "lazy")
    ] * 8
    (art / "data.json").write_text(json.dumps(records))
    configs = {}
    for name in ("tiny_full", "tiny_lora"):
        text = (HERE / f"{name}.yaml").read_text().replace("@OUT@", str(out))
        configs[name] = out / f"{name}.yaml"
        configs[name].write_text(text)
    return configs


if __name__ == "__main__":
    for path in prepare(Path(sys.argv[1]).resolve()).values():
        print(path)
