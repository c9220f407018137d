"""Full fine-tuning of the bundled tiny models (masked or uniform transition) on CPU.

The network, tokenizer and training loss are the ones `parallelbench train` uses (masked:
the MDLM/LLaDA objective; uniform: the SEDD-style re-noising objective), so a fine-tuned
folder is an ordinary tiny model folder (config.json, model.pt, tokenizer.json) plus the
fine-tuning record, and loads as `tiny:DIR` or `tiny-uniform:DIR`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Sequence

import torch

from parallelbench.models.tiny.data import Example, collate, encode_sample


class TinyBackend:
    def __init__(self, spec: str):
        from parallelbench.models.tiny import MASKED, UNIFORM, load_net

        variant, _, path = spec.partition(":")
        self.uniform = variant == "tiny-uniform"
        self.path = path or None
        self.net, self.tok = load_net(self.path, UNIFORM if self.uniform else MASKED)
        found = str(self.net.info.get("transition", "masked"))
        if found != ("uniform" if self.uniform else "masked"):
            raise ValueError(f"{self.path} holds a {found}-transition tiny model; "
                             f"fine-tune it as {'tiny-uniform' if found == 'uniform' else 'tiny'}:{self.path}")
        from parallelbench.models.tiny.train import _loss_fn

        self._loss = _loss_fn("uniform" if self.uniform else "masked")
        self.fingerprint = self.net.weights_sha
        self._task_index: dict[str, int] = {}
        for p in self.net.parameters():
            p.requires_grad_(True)

    # -- data
    def encode(self, sample: Any, task: Any) -> Example:
        index = self._task_index.setdefault(task.id, len(self._task_index))
        return encode_sample(self.tok, sample, task.max_new_tokens, index)

    # -- training
    def parameters(self) -> list[torch.nn.Parameter]:
        return list(self.net.parameters())

    def loss(self, examples: Sequence[Example], gen: torch.Generator) -> torch.Tensor:
        return self._loss(self.net, collate(examples, self.tok.pad_id), gen)

    def train_mode(self, on: bool) -> None:
        self.net.train(on)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.net.state_dict().items()}

    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None:
        self.net.load_state_dict(state)

    # -- evaluation
    def text_model(self) -> Any:
        if self.uniform:
            from parallelbench.models.tiny.uniform import UniformTextModel

            return UniformTextModel(self.net, self.tok, name="tiny-uniform", batch_size=64)
        from parallelbench.models.diffusion import DiffusionTextModel

        return DiffusionTextModel(self.net, self.tok, name="tiny", batch_size=64)

    @torch.no_grad()
    def accuracy(self, samples: Sequence[Any]) -> float:
        """Mean score with one token per step, most confident first (the tiny card's column)."""
        from parallelbench.models.finetune.evaluate import one_by_one_accuracy

        return one_by_one_accuracy(self.text_model(), samples)

    # -- result
    def export(self, out: Path, record: dict) -> None:
        """model.pt in fp32 (a fine-tune's small updates would round away in fp16), the base's
        config with the fine-tuning facts added, the unchanged tokenizer, and the record."""
        from parallelbench.models.tiny import FILES, FINETUNE_RECORD, MASKED, UNIFORM, shipped_files

        out.mkdir(parents=True, exist_ok=True)
        src = [Path(self.path) / n for n in FILES] if self.path else shipped_files(UNIFORM if self.uniform else MASKED)
        tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in self.net.state_dict().items()}
        tmp = out / "model.pt.tmp"
        torch.save(tensors, tmp)
        tmp.replace(out / "model.pt")
        info = dict(self.net.info)
        info["finetune"] = {k: record[k] for k in ("base", "tasks", "steps", "seconds") if k in record}
        (out / "config.json").write_text(json.dumps(info, indent=1))
        if src[2].resolve() != (out / "tokenizer.json").resolve():
            shutil.copyfile(src[2], out / "tokenizer.json")
        (out / FINETUNE_RECORD).write_text(json.dumps(record, indent=1))
