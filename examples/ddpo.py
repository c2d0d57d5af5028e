"""DDPO and AlignProp (TRL 0.23.1, the last release that has them) logging through the tunetrack
Accelerate tracker, on a tiny Stable Diffusion pipeline built from configs: offline, on a CPU.

    python examples/ddpo.py ddpo|alignprop [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build_tiny_sd(path: Path) -> Path:
    """A random, tiny StableDiffusionPipeline saved with save_pretrained (no hub)."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from tokenizers import pre_tokenizers
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(0)
    chars = sorted(pre_tokenizers.ByteLevel.alphabet())  # the 256 byte-level symbols CLIP's BPE works on
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in chars:
        vocab.setdefault(c, len(vocab))
        vocab.setdefault(c + "</w>", len(vocab))
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(path / "vocab.json"), str(path / "merges.txt"), model_max_length=16)
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
            hidden_size=32,
            intermediate_size=37,
            num_attention_heads=4,
            num_hidden_layers=2,
            vocab_size=len(vocab),
            max_position_embeddings=16,
        )
    )
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
    )
    vae = AutoencoderKL(
        block_out_channels=[32, 64],
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
        sample_size=16,
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    pipe = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(path / "pipeline")
    return path / "pipeline"


def image_hook(samples, global_step, tracker):
    """TRL's image_samples_hook: hand the sampled images to the tracker (ours stores PNGs).
    DDPO passes ``[[images, prompts, metadata, rewards, ...], ...]``, AlignProp a dict."""
    images = samples["images"] if isinstance(samples, dict) else samples[0][0]
    tracker.log_images({"samples": list(images[:2])}, step=global_step)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trainer", choices=["ddpo", "alignprop"])
    parser.add_argument("--dir", default=None)
    opts = parser.parse_args()

    import torch
    from accelerate import PartialState
    from trl import DefaultDDPOStableDiffusionPipeline

    PartialState()  # TRL's pipeline logs through accelerate's logger, which needs the state first

    from tunetrack.integrations.accelerate import TunetrackTracker

    prompts = ["a red fox", "a lazy dog"]
    with tempfile.TemporaryDirectory() as tmp:
        pipeline = DefaultDDPOStableDiffusionPipeline(str(build_tiny_sd(Path(tmp) / "sd")), use_lora=True)
        tracker = TunetrackTracker(project=opts.trainer, run_name=f"{opts.trainer}-example", dir=opts.dir)
        common = dict(
            num_epochs=1,
            sample_num_steps=2,
            train_batch_size=1,
            mixed_precision="no",
            log_with=tracker,
            logdir=str(Path(tmp) / "logs"),
            save_freq=100,
        )
        if opts.trainer == "ddpo":
            from trl import DDPOConfig, DDPOTrainer

            def reward(images, prompts, metadata):
                return images.float().mean(dim=(1, 2, 3)), {}

            config = DDPOConfig(sample_batch_size=2, sample_num_batches_per_epoch=1, **common)
            trainer = DDPOTrainer(
                config, reward, lambda: (prompts[0], {}), pipeline, image_samples_hook=image_hook
            )
        else:
            from trl import AlignPropConfig, AlignPropTrainer

            def reward(images, prompts, metadata):
                return images.float().mean(dim=(1, 2, 3)), {}

            # two diffusion steps: backpropagate through both (the default truncation assumes ~50)
            config = AlignPropConfig(
                log_image_freq=1, truncated_backprop_rand=False, truncated_backprop_timestep=0, **common
            )
            trainer = AlignPropTrainer(
                config, reward, lambda: (prompts[1], {}), pipeline, image_samples_hook=image_hook
            )
        with torch.autocast("cpu", enabled=False):
            trainer.train()
    print(
        f"recorded run {tracker.tracker.id if tracker.tracker else None}"
    )  # no end_training(): exit ends the run


if __name__ == "__main__":
    main()
