"""`hf:` checkpoints of model_type llada2_moe (LLaDA 2.0 / 2.1 mini and flash): native only.

They load through the native block-diffusion implementation (`parallelbench.models.native`),
never through the checkpoint's own code; see docs/models.md for their quirks.
"""

from __future__ import annotations


def build(ckpt, opts, *, device: str, dtype, name: str):
    from parallelbench.models.hf.native_build import build_native

    return build_native(ckpt, opts, device=device, dtype=dtype, name=name)
