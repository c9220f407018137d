"""LoRA adapters written by `parallelbench finetune`, applied at load (`--model-opt adapter=DIR`).

An adapter only makes sense on the weights it was trained on, so its folder records the base
(`finetune.json`: the spec and a fingerprint of the base weights) and the load refuses any
other base in one line. The fingerprint hashes a few bf16-rounded weight slices (input
embedding, first query projection), so it is the same whether the base loads in fp32 on CPU
or bf16 on GPU, and whatever path or hub id names it. The adapter is merged into the weights,
so decoding runs exactly the code path of the base model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from parallelbench.models.hf.errors import HFModelError

RECORD = "finetune.json"  # written next to adapter_config.json / adapter_model.safetensors
# The paper: query, key and value projections only. Published LLaDA / Dream layouts (and
# checkpoints run through their own code) name them q_proj/k_proj/v_proj; the native
# implementation (parallelbench.models.native) names them q/k/v inside each block.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj")
LORA_TARGET_SETS = (LORA_TARGETS, ("q", "k", "v"))


def lora_targets(model: Any) -> tuple[str, ...] | None:
    """The query/key/value module names of `model` (the first naming it has all of), else None."""
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    for targets in LORA_TARGET_SETS:
        if set(targets) <= names:
            return targets
    return None


def read_record(folder: str | Path) -> dict[str, Any]:
    """The adapter folder's record, or one line saying what is wrong with the folder."""
    path = Path(folder)
    if not path.is_dir():
        raise HFModelError(f"adapter folder {path} does not exist; give --model-opt adapter=<folder written by parallelbench finetune>")
    if not (path / "adapter_config.json").exists() or not (path / RECORD).exists():
        raise HFModelError(
            f"{path} is not an adapter written by `parallelbench finetune` (it needs adapter_config.json and {RECORD})"
        )
    try:
        record = json.loads((path / RECORD).read_text())
    except (OSError, ValueError) as exc:
        raise HFModelError(f"cannot read {path / RECORD} ({exc}); fine-tune again into a fresh --out") from None
    if not isinstance(record, dict) or "base_fingerprint" not in record:
        raise HFModelError(f"{path / RECORD} has no base fingerprint; it was not written by `parallelbench finetune`")
    return record


def base_fingerprint(model: Any) -> str:
    """16 hex digits identifying a base model's weights, independent of dtype and device."""
    import torch

    parts: list[tuple[str, Any]] = []
    embed = getattr(model, "get_input_embeddings", lambda: None)()
    if embed is not None and getattr(embed, "weight", None) is not None:
        parts.append(("embed", embed.weight))
    for name, param in model.named_parameters():
        if name.endswith(("q_proj.weight", "q_proj.base_layer.weight", ".q.weight", ".q.base_layer.weight")):
            parts.append(("q_proj", param))
            break
    if not parts:  # no recognisable layer: the first parameters stand in
        parts = list(model.named_parameters())[:2]
    h = hashlib.sha256()
    for name, tensor in parts:
        flat = tensor.detach().reshape(-1)[: 1 << 20].to("cpu", torch.bfloat16).to(torch.float32)
        h.update(name.encode())
        h.update(str(tuple(tensor.shape)).encode())
        h.update(flat.numpy().tobytes())
    return h.hexdigest()[:16]


def adapter_sha(folder: str | Path) -> str:
    """Hash of the adapter weights file (what `versions()` records)."""
    path = Path(folder)
    files = sorted(path.glob("adapter_model.*"))
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def apply_adapter(text_model: Any, folder: str | Path, *, spec: str) -> None:
    """Merge the LoRA adapter in `folder` into `text_model.net.model`, refusing a foreign base."""
    record = read_record(folder)
    net = getattr(text_model, "net", None)
    model = getattr(net, "model", None)
    if model is None:
        raise HFModelError(f"{spec} has no trainable network to take adapter={folder}")
    found = base_fingerprint(model)
    if found != record["base_fingerprint"]:
        raise HFModelError(
            f"adapter {folder} was fine-tuned from {record.get('base', 'another model')}, not from {spec} "
            f"(base weights differ); load it with --model {record.get('base', '<its base>')}"
        )
    try:
        from peft import PeftModel
    except ImportError:
        raise HFModelError("adapters need peft: pip install peft") from None
    try:
        merged = PeftModel.from_pretrained(model, str(folder), is_trainable=False).merge_and_unload()
    except Exception as exc:  # noqa: BLE001 - a corrupt or mismatched adapter file
        text = " ".join(str(exc).split())[:200]
        raise HFModelError(f"cannot apply adapter {folder} to {spec} ({type(exc).__name__}: {text})") from None
    net.model = merged.eval()
    versions = getattr(text_model, "_versions", None)
    if isinstance(versions, dict):
        versions.update({
            "adapter.weights": adapter_sha(folder),
            "adapter.base": str(record.get("base", "")),
            "adapter.tasks": ",".join(record.get("tasks", [])),
        })
