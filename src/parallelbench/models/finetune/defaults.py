"""Default settings of `parallelbench finetune`, per kind of model (kept light: no torch import).

`hf` is the paper's LLaDA 1.5 fine-tuning (appendix "Impact of Fine-tuning"). The bundled
models stand where the paper's SEDD models stood (masked and uniform transitions, fully
fine-tuned: AdamW, batch 64, lr 3e-4, cosine with a 0.25 warm-up), with CPU-sized data and
epochs so the default run takes minutes; the paper's sizes are one flag each away.
"""

from __future__ import annotations

DEFAULTS: dict[str, dict[str, float | int]] = {
    "hf": {"train_samples": 20_000, "val_samples": 5_000, "epochs": 10, "batch_size": 32, "lr": 1e-5,
           "warmup": 0.05, "rank": 128, "alpha": 256, "dropout": 0.05, "val_decode": 64},
    "tiny": {"train_samples": 2_000, "val_samples": 200, "epochs": 3, "batch_size": 64, "lr": 3e-4,
             "warmup": 0.25, "rank": 0, "alpha": 0, "dropout": 0.0, "val_decode": 100},
}


def kind_of(spec: str) -> str | None:
    """'tiny' for the bundled models (and their folders), 'hf' for hf: specs, None otherwise."""
    if spec in ("tiny", "tiny-uniform") or spec.startswith(("tiny:", "tiny-uniform:")):
        return "tiny"
    if spec.startswith("hf:"):
        return "hf"
    return None
