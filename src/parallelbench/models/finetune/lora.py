"""LoRA fine-tuning of an `hf:` dLLM with the masked-diffusion loss (the paper's LLaDA 1.5 study).

Loss (LLaDA's SFT objective): per example a mask ratio t ~ U(0, 1] (floored at 1e-3), each
answer position masked with probability t, cross-entropy on the masked answer positions
weighted 1/t and divided by the answer length; the prompt is never masked. The answer is
padded with EOS to the task's generation budget, as the decoder sees it. The forward is the
family adapter's own (`full_logits`, then the shift and end-token merge of `finish_logits`),
so training sees logits exactly as decoding does: the net's own forward, run with gradients.

LoRA goes on the query, key and value projections: the modules named q_proj, k_proj and
v_proj (the published LLaDA and Dream layouts; Dream nests them under self_attn), or q, k
and v inside each block of the native implementation. On a GPU the base stays in bf16 and the
adapter weights in fp32 under bf16 autocast.

A model that reads its projection weights directly instead of calling the modules would
never run peft's LoRA branch (the native implementation calls its modules as soon as one is
wrapped, so peft's LoRA runs there); for such a model the adapter is applied in weight space,
W + (alpha / r) B A, through a parametrization of the base weight (same adapter, same saved
format; LoRA dropout has no weight-space form and is not applied).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from parallelbench.models.hf.adapter import LORA_TARGETS, RECORD, base_fingerprint, lora_targets
from parallelbench.models.tiny.data import Example, collate

T_EPS = 1e-3


class LoraError(ValueError):
    """The model cannot take a LoRA adapter (no q/k/v projections, not a dLLM)."""


def masked_diffusion_loss(net: Any, batch: dict[str, torch.Tensor], gen: torch.Generator,
                          autocast: bool = False) -> torch.Tensor:
    canvas, maskable, answer = batch["canvas"], batch["maskable"], batch["answer"]
    b = canvas.shape[0]
    t = (1 - T_EPS) * (1 - torch.rand(b, generator=gen)) + T_EPS  # (0, 1]
    noise = (torch.rand(canvas.shape, generator=gen) < t[:, None]) & maskable
    inputs = canvas.masked_fill(noise, int(net.mask_id))
    device = net.device
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
        logits = train_logits(net, inputs.to(device), batch["attention"].to(device))
    noise_d = noise.to(device)
    ce = F.cross_entropy(logits[noise_d].float(), canvas.to(device)[noise_d], reduction="none")
    rows = torch.arange(b, device=device)[:, None].expand_as(noise_d)[noise_d]
    t_d = t.to(device)
    per_row = torch.zeros(b, device=device).index_add(0, rows, ce / t_d[rows])
    return (per_row / answer.to(device).sum(1).clamp(min=1)).mean()


def train_logits(net: Any, canvas: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    """The logits the decoder sees (shift and end-token merge included), with gradients.

    A net's `forward` runs under `torch.no_grad()`; the undecorated function behind it is
    the same computation (outside a decode session, so no KV cache is involved)."""
    forward = getattr(getattr(type(net), "forward", None), "__wrapped__", None)
    if forward is not None:
        return forward(net, canvas, attention_mask=attention)
    return net.finish_logits(net.full_logits(canvas, attention))


class _WeightDelta(torch.nn.Module):
    """Parametrization W -> W + scaling * B @ A with the LoRA matrices of a peft layer."""

    def __init__(self, layer: Any, adapter: str):
        super().__init__()
        object.__setattr__(self, "_layer", layer)  # a reference, not a submodule: the layer owns this weight
        self.adapter = adapter

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        layer = self._layer
        a = layer.lora_A[self.adapter].weight
        b = layer.lora_B[self.adapter].weight
        return weight + (b @ a * layer.scaling[self.adapter]).to(weight.dtype)


class LoraBackend:
    def __init__(self, spec: str, options: dict, *, rank: int, alpha: int, dropout: float):
        from parallelbench.models.registry import load_model

        self.spec = spec
        self.text = load_model(spec, **options)
        net = getattr(self.text, "net", None)
        if getattr(self.text, "kind", None) != "diffusion" or getattr(net, "model", None) is None:
            raise LoraError(f"model {spec!r} is {getattr(self.text, 'kind', 'not a dLLM')}, not a diffusion LM; "
                            "finetune trains hf: dLLMs (LLaDA, Dream) and the bundled tiny models")
        self.net = net
        model = net.model
        targets = lora_targets(model)
        if targets is None:
            raise LoraError(f"model {spec!r} has no {'/'.join(LORA_TARGETS)} (or native q/k/v) layers for LoRA; "
                            "LLaDA and Dream have them")
        self.fingerprint = base_fingerprint(model)
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError:
            raise LoraError("LoRA fine-tuning needs peft: pip install peft") from None
        for p in model.parameters():
            p.requires_grad_(False)
        config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(targets),
                            bias="none")
        self.peft = get_peft_model(model, config)
        net.model = self.peft
        self.mode = "modules"
        if self._reads_weights_directly():
            self._apply_in_weight_space()
            self.mode = "weights"
        self.autocast = self.net.device.type == "cuda"
        self.tok = self.text.tokenizer
        self.eos_id = int(net.eos_id)
        pad = getattr(net, "pad_id", None)
        self.pad_id = int(pad) if pad is not None else self.eos_id

    def _lora_layers(self) -> list[Any]:
        from peft.tuners.lora import LoraLayer

        return [m for m in self.peft.modules() if isinstance(m, LoraLayer)]

    def _reads_weights_directly(self) -> bool:
        """True when a forward pass never calls the LoRA-wrapped modules."""
        called: list[bool] = []
        hooks = [m.register_forward_hook(lambda *_: called.append(True)) for m in self._lora_layers()]
        try:
            ids = torch.full((1, 4), int(self.net.mask_id), dtype=torch.long, device=self.net.device)
            with torch.no_grad():
                train_logits(self.net, ids, torch.ones_like(ids, dtype=torch.bool))
        finally:
            for h in hooks:
                h.remove()
        return not called

    def _apply_in_weight_space(self) -> None:
        from torch.nn.utils import parametrize

        for layer in self._lora_layers():
            adapter = layer.active_adapters[0]
            parametrize.register_parametrization(layer.get_base_layer(), "weight", _WeightDelta(layer, adapter),
                                                 unsafe=True)

    # -- data
    def encode(self, sample: Any, task: Any) -> Example:
        prompt = self.tok.encode_chat(sample.messages)
        ids = [int(i) for i in self.tok.tokenizer(sample.answer, add_special_tokens=False)["input_ids"]]
        gen = task.max_new_tokens
        target = (ids + [self.eos_id] * gen)[:gen]  # the answer, then EOS up to the budget (LLaDA's padding)
        return Example(prompt, target, [True] * gen, 0)

    # -- training
    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.peft.parameters() if p.requires_grad]

    def loss(self, examples: Sequence[Example], gen: torch.Generator) -> torch.Tensor:
        return masked_diffusion_loss(self.net, collate(examples, self.pad_id), gen, autocast=self.autocast)

    def train_mode(self, on: bool) -> None:
        self.peft.train(on)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().to("cpu", copy=True) for n, p in self.peft.named_parameters() if p.requires_grad}

    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None:
        params = dict(self.peft.named_parameters())
        with torch.no_grad():
            for name, value in state.items():
                params[name].copy_(value.to(params[name].device, params[name].dtype))

    # -- evaluation
    @torch.no_grad()
    def accuracy(self, samples: Sequence[Any]) -> float:
        from parallelbench.models.finetune.evaluate import one_by_one_accuracy

        return one_by_one_accuracy(self.text, samples)

    # -- result
    def export(self, out: Path, record: dict) -> None:
        """adapter_config.json + adapter_model.safetensors (peft's format) and the record."""
        out.mkdir(parents=True, exist_ok=True)
        self.peft.save_pretrained(str(out))
        (out / RECORD).write_text(json.dumps(record, indent=1))
