"""`hf:` checkpoints of LLaDA-MoE (model_type lladamoe, or llada with expert fields): native only.

They load through the native implementation (`parallelbench.models.native.lladamoe`), never
through the checkpoint's own code; see docs/models.md.
"""

from __future__ import annotations


def build(ckpt, opts, *, device: str, dtype, name: str):
    from parallelbench.models.hf.native_build import build_native

    return build_native(ckpt, opts, device=device, dtype=dtype, name=name)
