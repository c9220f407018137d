"""Our small masked-diffusion LM, trained on a CPU and shipped with the package.

`load()` gives the shipped masked model as a `BenchModel` named "tiny" (the registry's
spec `tiny`); `load_uniform()` the uniform-transition variant ("tiny-uniform").
`load_net()` gives the bare network and tokenizer, for outside decoding code:

    net, tok = load_net()
    logits = net(torch.tensor([tok.encode_prompt(prompt) + [tok.mask_id] * 32])).logits
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from parallelbench.models.tiny.model import TinyDenoiser
    from parallelbench.models.tokenizer import WordTokenizer

WEIGHTS_DIR = Path(__file__).parent / "weights"
# Shipped files sit flat in weights/ with a prefix per variant ("masked-config.json", ...);
# a folder written by `parallelbench train` holds the same files without prefix.
MASKED = "masked-"
UNIFORM = "uniform-"
FILES = ("config.json", "model.pt", "tokenizer.json")


def shipped_files(prefix: str) -> list[Path]:
    return [WEIGHTS_DIR / (prefix + name) for name in FILES]


def load_net(path: str | Path | None = None, prefix: str = MASKED) -> tuple["TinyDenoiser", "WordTokenizer"]:
    """Network (eval mode, fp32) and tokenizer from a folder written by `parallelbench train`,
    or, without `path`, from the shipped weights of the variant named by `prefix`."""
    import torch

    from parallelbench.models.tiny.model import TinyConfig, TinyDenoiser
    from parallelbench.models.tokenizer import WordTokenizer

    files = [Path(path) / n for n in FILES] if path else shipped_files(prefix)
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise FileNotFoundError(
            f"missing {', '.join(missing)}; give --path a folder written by `parallelbench train` "
            "(it holds config.json, model.pt and tokenizer.json)"
        )
    info = json.loads(files[0].read_text())
    net = TinyDenoiser(TinyConfig(**info["model"]))
    state = torch.load(files[1], map_location="cpu", weights_only=True)
    net.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    net.eval()
    net.info = info
    net.weights_sha = hashlib.sha256(files[1].read_bytes()).hexdigest()[:16]
    return net, WordTokenizer.load(files[2])


# The loaders' options (`--model-opt`), each with whether it can change outputs (provenance):
# `path` is covered by the weights hash in `versions()`; batching and threads do not change a row.
TINY_OPTIONS = {"path": False, "batch_size": False, "threads": False}
UNIFORM_OPTIONS = {"path": False, "batch_size": False}

FINETUNE_RECORD = "finetune.json"  # written by `parallelbench finetune` next to the weights


def _versions(net: "TinyDenoiser", source: str) -> dict[str, str]:
    # the folder's name, not its path: a row's provenance must not change when the folder moves
    out = {"tiny.weights": net.weights_sha, "tiny.source": source if source == "shipped" else Path(source).name,
           "tiny.transition": str(net.info.get("transition", "masked"))}
    record = Path(source) / FINETUNE_RECORD if source != "shipped" else None
    if record is not None and record.exists():
        info = json.loads(record.read_text())
        out.update({"finetune.base": str(info.get("base", "")), "finetune.tasks": ",".join(info.get("tasks", [])),
                    "finetune.base_weights": str(info.get("base_fingerprint", ""))})
    return out


def _check_transition(net: "TinyDenoiser", path: str | Path | None, wanted: str) -> None:
    """A folder holds one variant; loading it as the other would decode with the wrong sampler."""
    found = str(net.info.get("transition", "masked"))
    if path and found != wanted:
        spec = "tiny-uniform" if found == "uniform" else "tiny"
        raise ValueError(f"{path} holds a {found}-transition tiny model; load it as {spec}:{path}")


def load(arg: str = "", *, path: str | Path | None = None, batch_size: int = 64, threads: int | None = None):
    """The masked tiny model as a `BenchModel` (spec `tiny`). `path` picks another trained folder."""
    from parallelbench.models.diffusion import DiffusionTextModel

    if threads:
        import torch

        torch.set_num_threads(int(threads))
    path = path or arg or None
    net, tok = load_net(path, MASKED)
    _check_transition(net, path, "masked")
    return DiffusionTextModel(net, tok, name="tiny", batch_size=batch_size,
                              versions=_versions(net, str(path) if path else "shipped"))


def load_uniform(arg: str = "", *, path: str | Path | None = None, batch_size: int = 64):
    """The uniform-transition variant (spec `tiny-uniform`), decoded by its own sampler."""
    from parallelbench.models.tiny.uniform import UniformTextModel

    path = path or arg or None
    net, tok = load_net(path, UNIFORM)
    _check_transition(net, path, "uniform")
    return UniformTextModel(net, tok, name="tiny-uniform", batch_size=batch_size,
                            versions=_versions(net, str(path) if path else "shipped"))
