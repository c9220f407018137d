"""`parallelbench models check hf:<dir-or-id>`: load a checkpoint natively and say whether to trust it.

Reports the config, parameter count and dtype of the native load, then runs a few random
canvases (about half their positions masked) through it alone and in one left-padded batch:
a row must get the same logits at its real positions either way. Block-diffusion families
(SDAR / TraDo, LLaDA 2.x) run under their block-causal attention (blocks of the config's
block size, else the family's default decoding block, on each row's own position grid), as
their decoding does, and the reference gets the same mask. With `trust_remote_code`
and a transformers version that runs the checkpoint's own modeling code (4.x: the published
LLaDA and Dream code fails under 5.x), the same canvases also go through that code and the
largest logit difference against it is reported. `reference_python` runs that code in another
interpreter instead (a scratch venv with transformers 4.49), in a subprocess: naming it is the
explicit request to run the checkpoint's code.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from parallelbench.models.hf.errors import HFModelError
from parallelbench.models.hf.hub import short

# config fields worth showing, in this order (OLMo-style LLaDA and Qwen2-style Dream names)
CONFIG_FIELDS = ("model_type", "d_model", "hidden_size", "n_layers", "num_hidden_layers", "n_heads",
                 "num_attention_heads", "n_kv_heads", "num_key_value_heads", "head_dim", "mlp_hidden_size",
                 "intermediate_size", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                 "expert_intermediate_size", "shared_expert_intermediate_size", "num_shared_experts", "vocab_size", "embedding_size", "mask_token_id", "block_size", "rope_theta",
                 "max_sequence_length", "max_position_embeddings", "torch_dtype")
# what a native load reads; never the checkpoint's .py files
NATIVE_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken"]
SCRATCH_VENV_HINT = ("see 'Checking a checkpoint' in docs/models.md for a scratch venv with the transformers "
                     "version the family's code needs (4.49 LLaDA / Dream, 4.57 LLaDA 2; SDAR's needs flash-attn)")


@dataclass
class CheckReport:
    family: str
    source: str
    config: dict[str, Any]
    parameters: int
    dtypes: list[str]
    device: str
    load_seconds: float
    lengths: list[int]
    padded_vs_alone: float  # native, left-padded batch vs each row alone (batch invariance)
    reference: str  # what happened with the checkpoint's own code, one line
    reference_alone: float | None = None  # native vs reference, each canvas alone
    reference_padded: float | None = None  # native padded batch vs reference alone
    shift: str = ""  # how Dream's logits were aligned with the reference
    notes: list[str] = field(default_factory=list)
    block: int | None = None  # block-diffusion families: the block-causal block length used

    def lines(self) -> list[str]:
        cfg = ", ".join(f"{k}={self.config[k]}" for k in CONFIG_FIELDS if k in self.config)
        out = [
            f"checkpoint: {self.source}",
            f"family: {self.family} (native implementation)",
            f"config: {cfg}",
            f"parameters: {self.parameters:,} ({self.parameters / 1e9:.2f} B)",
            f"dtype: {', '.join(self.dtypes)} on {self.device} (loaded in {self.load_seconds:.1f} s)",
            f"canvases: {len(self.lengths)} random, lengths {', '.join(map(str, self.lengths))}, about half masked"
            + (f", block-causal attention in blocks of {self.block}" if self.block else ""),
            f"native, padded batch vs alone: max |logit difference| {self.padded_vs_alone:.3g}",
        ]
        if self.reference_alone is not None:
            out.append(f"native vs checkpoint code, alone: max |logit difference| {self.reference_alone:.3g}{self.shift}")
            out.append(f"native padded vs checkpoint code alone: max |logit difference| {self.reference_padded:.3g}")
        out.append(f"reference: {self.reference}")
        return out + self.notes


def _native() -> Any:
    try:
        return importlib.import_module("parallelbench.models.native")
    except ImportError as exc:
        if exc.name and not "parallelbench.models.native".startswith(exc.name):
            raise HFModelError(f"the native implementations cannot be imported ({short(str(exc))})") from None
        raise HFModelError(
            "the native implementations (parallelbench.models.native) are not in this install; "
            "update ParallelBench to a version that has them"
        ) from None


def _local_folder(ckpt: Any, revision: str | None, with_code: bool) -> Path:
    if ckpt.local:
        return Path(ckpt.source)
    from huggingface_hub import snapshot_download

    patterns = NATIVE_FILES + (["*.py"] if with_code else [])
    try:
        return Path(snapshot_download(ckpt.source, revision=revision, allow_patterns=patterns,
                                      local_files_only=ckpt.offline))
    except Exception as exc:  # noqa: BLE001
        raise HFModelError(f"cannot download 'hf:{ckpt.source}' ({short(f'{type(exc).__name__}: {exc}')})") from None


def random_canvases(vocab: int, mask_id: int, lengths: list[int], seed: int) -> list[Any]:
    """One LongTensor [L] per length: random ids (never the mask id), about half replaced by the mask."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    rows = []
    for length in lengths:
        ids = torch.randint(0, vocab - 1, (length,), generator=gen)
        ids = ids + (ids >= mask_id).long()  # skip mask_id itself
        masked = torch.rand(length, generator=gen) < 0.5
        rows.append(torch.where(masked, torch.full_like(ids, mask_id), ids))
    return rows


def left_pad(rows: list[Any], pad_id: int) -> tuple[Any, Any]:
    import torch

    width = max(len(r) for r in rows)
    canvas = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        canvas[i, width - len(r):] = r
        mask[i, width - len(r):] = True
    return canvas, mask


def _logits(out: Any) -> Any:
    return getattr(out, "logits", out)


def block_layout(mask: Any, block: int) -> tuple[Any, Any]:
    """(position_ids, attention_bias) of a left-padded batch under block-causal attention: each row's
    blocks on its own grid (position 0 = its first real token); pads are blocked as keys and see
    only themselves as queries."""
    import torch

    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    blk = pos // block
    allowed = mask[:, None, :] & mask[:, :, None] & (blk[:, None, :] <= blk[:, :, None])
    allowed = allowed | (torch.eye(mask.shape[1], dtype=torch.bool, device=mask.device)[None] & ~mask[:, :, None])
    return pos, torch.zeros(allowed.shape, device=mask.device).masked_fill(~allowed, float("-inf"))


def _native_logits(module: Any, canvas: Any, mask: Any, block: int | None) -> Any:
    if not block:
        return _logits(module(canvas, attention_mask=mask))
    pos, bias = block_layout(mask, block)
    return module(canvas, attention_mask=mask, position_ids=pos, attention_bias=bias, bias_as_given=True)


def _max_diff(a: Any, b: Any) -> float:
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def _padded_diffs(padded: Any, alone: list[Any], rows: list[Any], skip_first: bool) -> float:
    """Largest difference at the real positions of each padded row against that row alone."""
    worst = 0.0
    width = padded.shape[1]
    skip = 1 if skip_first else 0  # a shifted family's first real logit comes from the pad before it
    for i, r in enumerate(rows):
        real = padded[i, width - len(r) + skip:]
        worst = max(worst, _max_diff(real[..., : alone[i].shape[-1]], alone[i][0, skip:, : real.shape[-1]]))
    return worst


def _shifted(logits: Any) -> Any:
    import torch

    return torch.cat([logits[:, :1], logits[:, :-1]], dim=1)


def check(arg: str, *, device: str = "cpu", dtype: str | None = None, canvases: int = 3, length: int = 32,
          seed: int = 0, revision: str | None = None, trust_remote_code: bool = False,
          reference_python: str | None = None, log: Callable[[str], None] | None = None) -> CheckReport:
    """Load `hf:<arg>` natively and measure it; every user error is one `HFModelError` line."""
    import torch

    from parallelbench.models.hf.checkpoint import resolve
    from parallelbench.models.hf.detect import native_family

    if canvases < 1 or length < 4:
        raise HFModelError("models check needs --canvases >= 1 and --length >= 4")
    if dtype is not None and dtype not in ("float32", "bfloat16", "float16", "fp32", "bf16", "fp16"):
        raise HFModelError(f"--dtype {dtype!r} is invalid: use float32, bfloat16 or float16")
    ckpt = resolve(arg, revision)
    family = native_family(ckpt.config)
    if family is None:
        kind = ckpt.config.get("model_type") or ckpt.config.get("architectures")
        raise HFModelError(
            f"'hf:{arg}' (model_type {kind!r}) is not of a family with a native implementation; "
            "models check covers LLaDA / LLaDA 1.5, Dream / DiffuCoder, SDAR / TraDo and LLaDA 2.x checkpoints"
        )
    native = _native()
    folder = _local_folder(ckpt, revision, with_code=trust_remote_code or reference_python is not None)
    start = time.perf_counter()
    try:
        module, config = native.load_native(str(folder), device=device, dtype=dtype)
    except HFModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - the loader's own one-line errors and anything else
        raise HFModelError(f"cannot load 'hf:{arg}' natively: {short(str(exc) or type(exc).__name__, 240)}") from None
    load_seconds = time.perf_counter() - start
    config = dict(config or ckpt.config)
    module.eval()
    params = list(module.parameters())
    model_device = str(params[0].device) if params else device

    vocab = int(config.get("vocab_size") or config.get("embedding_size"))
    mask_id = next((int(m) for m in (getattr(module, "mask_id", None), config.get("mask_token_id")) if m is not None),
                   vocab - 1)
    pad_id = int(config.get("pad_token_id") or config.get("eos_token_id") or 0)
    if pad_id == mask_id:
        pad_id = 0 if mask_id != 0 else 1
    lengths = [max(4, length - 7 * i) for i in range(canvases)]
    rows = random_canvases(vocab, mask_id, lengths, seed)
    shifted_family = family == "dream"
    block = int(module.block_size or module.default_block_length) if getattr(module, "block_causal", False) else None
    with torch.no_grad():
        alone = [_native_logits(module, r.unsqueeze(0).to(model_device),
                                torch.ones(1, len(r), dtype=torch.bool, device=model_device), block).cpu()
                 for r in rows]
        canvas, mask = left_pad(rows, pad_id)
        padded = _native_logits(module, canvas.to(model_device), mask.to(model_device), block).cpu()
    report = CheckReport(
        family=family, source=ckpt.label, config=config, parameters=sum(p.numel() for p in params),
        dtypes=sorted({str(p.dtype).replace("torch.", "") for p in params}), device=model_device,
        load_seconds=load_seconds, lengths=lengths,
        padded_vs_alone=_padded_diffs(padded, alone, rows, shifted_family), reference="", block=block,
    )
    _reference(report, folder, rows, alone, padded, trust_remote_code, device=model_device,
               dtype=params[0].dtype if params else torch.float32, shifted_family=shifted_family,
               reference_python=reference_python, block=block)
    return report


def _reference(report: CheckReport, folder: Path, rows: list[Any], alone: list[Any], padded: Any,
               trust_remote_code: bool, *, device: str, dtype: Any, shifted_family: bool,
               reference_python: str | None = None, block: int | None = None) -> None:
    """Fill the reference fields: the checkpoint's own code on the same canvases, when it can run.

    With `reference_python` that code runs in that interpreter (a venv with the transformers
    version the code was written for), in a subprocess; otherwise in this process, which needs
    transformers 4.x and --trust-remote-code.
    """
    import torch
    import transformers

    if reference_python is not None:
        try:
            ref, version = reference_logits(reference_python, folder, rows, device=device, dtype=dtype, block=block,
                                            family=report.family)
        except ReferenceFailed as exc:
            report.reference = str(exc)
            return
        label = f"the checkpoint's own code under transformers {version} (run by {reference_python})"
    else:
        version = transformers.__version__
        if int(version.split(".")[0]) >= 5:
            report.reference = (f"not run: the checkpoint's own code was written for transformers 4.x and does "
                                f"not run under transformers {version}; pass --reference-python with a venv's "
                                f"python, {SCRATCH_VENV_HINT}")
            return
        if not trust_remote_code:
            report.reference = ("skipped: comparing runs the checkpoint's own Python code; pass --trust-remote-code "
                                "(or --reference-python PATH) to do it")
            return
        try:
            auto = transformers.AutoModelForCausalLM if block else transformers.AutoModel
            model = auto.from_pretrained(str(folder), trust_remote_code=True, torch_dtype=dtype)
            model = model.to(device).eval()
            with torch.no_grad():
                ref = [_logits(model(r.unsqueeze(0).to(device),
                                     **_reference_kwargs(len(r), block, dtype, device, report.family))).cpu()
                       for r in rows]
        except Exception as exc:  # noqa: BLE001 - the checkpoint's code failing is a finding, not a crash
            report.reference = f"the checkpoint's own code failed under transformers {version}: " + short(
                f"{type(exc).__name__}: {exc}")
            return
        label = f"the checkpoint's own code under transformers {version}"
    _compare_reference(report, ref, rows, alone, padded, shifted_family)
    report.reference = label


def _compare_reference(report: CheckReport, ref: list[Any], rows: list[Any], alone: list[Any], padded: Any,
                       shifted_family: bool) -> None:
    diffs = [max(_max_diff(a[..., : r.shape[-1]], r[..., : a.shape[-1]]) for a, r in zip(alone, ref))]
    if shifted_family:  # the native net may already shift Dream's logits by one, as the engine sees them
        shifted = max(_max_diff(a[..., : r.shape[-1]], _shifted(r)[..., : a.shape[-1]]) for a, r in zip(alone, ref))
        if shifted < diffs[0]:
            ref = [_shifted(r) for r in ref]
            report.shift = " (checkpoint logits shifted by one position, as the engine sees them)"
            diffs = [shifted]
    report.reference_alone = diffs[0]
    report.reference_padded = _padded_diffs(padded, ref, rows, shifted_family)


def _reference_kwargs(length: int, block: int | None, dtype: Any, device: str, family: str = "") -> dict[str, Any]:
    """What the block-diffusion families' own decoding routines pass: SDAR's a [1, L, L] boolean
    block mask (True = attend), LLaDA 2's a [1, 1, L, L] additive one (0 / -inf), and position ids
    0..L-1; nothing for the other families."""
    import torch

    if not block:
        return {}
    blk = torch.arange(length, device=device) // block
    allowed = blk[None, :] <= blk[:, None]
    pos = torch.arange(length, device=device)[None]
    if family == "sdar":
        return {"attention_mask": allowed[None], "position_ids": pos}
    bias = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, float("-inf"))
    return {"attention_mask": bias[None, None], "position_ids": pos}


class ReferenceFailed(Exception):
    """The reference interpreter could not produce logits; the message is one line for the report."""


# Run by the reference interpreter: load the checkpoint with its own code, logits of each canvas alone
# (block-diffusion families: under the block-causal mask, as an additive [1, 1, L, L] bias).
REFERENCE_DRIVER = r"""
import json, sys
import torch
import transformers
job = json.loads(open(sys.argv[1]).read())
dtype = getattr(torch, job["dtype"])
block = job.get("block")
auto = transformers.AutoModelForCausalLM if block else transformers.AutoModel
model = auto.from_pretrained(job["folder"], trust_remote_code=True, torch_dtype=dtype)
model = model.to(job["device"]).eval()
out = []
with torch.no_grad():
    for ids in job["rows"]:
        kwargs = {}
        if block:
            n = len(ids)
            blk = torch.arange(n, device=job["device"]) // block
            allowed = blk[None, :] <= blk[:, None]
            bias = torch.zeros(allowed.shape, dtype=dtype, device=job["device"]).masked_fill(~allowed, float("-inf"))
            pos = torch.arange(n, device=job["device"])[None]
            if job.get("family") == "sdar":  # SDAR's code takes a boolean [1, L, L] mask (True = attend)
                kwargs = {"attention_mask": allowed[None], "position_ids": pos}
            else:  # LLaDA 2's an additive [1, 1, L, L] one
                kwargs = {"attention_mask": bias[None, None], "position_ids": pos}
        res = model(torch.tensor([ids], device=job["device"]), **kwargs)
        out.append(getattr(res, "logits", res).float().cpu())
torch.save(out, job["out"])
print(json.dumps({"transformers": transformers.__version__}))
"""


def reference_logits(python: str, folder: Path, rows: list[Any], *, device: str, dtype: Any,
                     block: int | None = None, family: str = "") -> tuple[list[Any], str]:
    """Logits of the checkpoint's own modeling code, run by `python` in a subprocess (each row alone).

    Runs the checkpoint's Python: only called when the user named the interpreter explicitly.
    """
    import json
    import os
    import subprocess
    import tempfile

    import torch

    if not Path(python).is_file():
        raise HFModelError(f"--reference-python {python} does not exist; give the python of a venv with the "
                           f"transformers version the checkpoint's code needs ({SCRATCH_VENV_HINT})")
    with tempfile.TemporaryDirectory(prefix="pb-check-ref-") as tmp:
        job = {"folder": str(folder), "dtype": str(dtype).replace("torch.", ""), "device": device,
               "rows": [[int(i) for i in r.tolist()] for r in rows], "out": str(Path(tmp) / "logits.pt"),
               "block": block, "family": family}
        (Path(tmp) / "job.json").write_text(json.dumps(job))
        (Path(tmp) / "driver.py").write_text(REFERENCE_DRIVER)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.setdefault("TORCHDYNAMO_DISABLE", "1")  # some published code wraps attention in torch.compile
        try:
            proc = subprocess.run([python, str(Path(tmp) / "driver.py"), str(Path(tmp) / "job.json")],
                                  capture_output=True, text=True, env=env, cwd=tmp)
        except OSError as exc:
            raise HFModelError(f"--reference-python {python} cannot be run ({short(str(exc))})") from None
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
            raise ReferenceFailed(f"the checkpoint's own code failed in {python}: "
                                  + short(lines[-1] if lines else f"exit status {proc.returncode}"))
        try:
            version = json.loads(proc.stdout.strip().splitlines()[-1])["transformers"]
            ref = torch.load(job["out"], weights_only=True)
        except Exception as exc:  # noqa: BLE001
            raise ReferenceFailed(f"{python} gave no reference logits ({short(str(exc))})") from None
    return ref, version
