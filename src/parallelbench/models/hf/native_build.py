"""Build an `hf:` LLaDA, Dream, SDAR / TraDo or LLaDA 2.x model through the native implementation.

Reads only config.json, generation_config.json, the safetensors weights and the tokenizer files
(downloaded from the hub when the argument is a hub id); the tokenizer loads with
trust_remote_code=False, falling back to the checkpoint's tokenizer.json when its
tokenizer_config names a custom class. No checkpoint code is imported or run.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from parallelbench.models.hf.checkpoint import Checkpoint
from parallelbench.models.hf.errors import HFModelError
from parallelbench.models.hf.hub import short

NATIVE_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja"]


def local_folder(ckpt: Checkpoint, revision: str | None) -> Path:
    """The checkpoint as a local folder: itself, or a snapshot of its non-code files."""
    if ckpt.local:
        return Path(ckpt.source)
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(ckpt.source, revision=revision, allow_patterns=NATIVE_FILES,
                                      local_files_only=ckpt.offline))
    except Exception as exc:  # noqa: BLE001
        raise HFModelError(f"cannot download 'hf:{ckpt.source}' ({short(f'{type(exc).__name__}: {exc}')})") from None


def load_tokenizer(folder: Path) -> Any:
    """AutoTokenizer without remote code; else tokenizer.json with tokenizer_config.json's special tokens."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # AutoTokenizer warns that config.json's model_type is unknown to it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # and about old config fields (rope_scaling)
            return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    except Exception as first:  # noqa: BLE001 - a custom tokenizer class: fall back to tokenizer.json
        error = first
    finally:
        hf_logging.set_verbosity(level)
    file = folder / "tokenizer.json"
    if not file.is_file():
        raise HFModelError(f"{folder}: no tokenizer.json and the tokenizer cannot load without its own code "
                           f"({short(f'{type(error).__name__}: {error}')}); add the checkpoint's tokenizer.json")
    extra: dict[str, Any] = {}
    cfg_path = folder / "tokenizer_config.json"
    if cfg_path.is_file():
        try:
            cfg = json.loads(cfg_path.read_text())
        except (OSError, ValueError) as exc:
            raise HFModelError(f"{cfg_path}: unreadable ({exc}); re-download the checkpoint") from None
        for key in ("bos_token", "eos_token", "pad_token", "unk_token", "mask_token", "chat_template",
                    "model_max_length", "additional_special_tokens"):
            value = cfg.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if value is not None:
                extra[key] = value
    template = folder / "chat_template.jinja"
    if "chat_template" not in extra and template.is_file():
        extra["chat_template"] = template.read_text()
    try:
        return PreTrainedTokenizerFast(tokenizer_file=str(file), **extra)
    except Exception as exc:  # noqa: BLE001
        raise HFModelError(f"{file}: cannot be read ({short(f'{type(exc).__name__}: {exc}')}); "
                           "re-download the checkpoint's tokenizer files") from None


def check_mask_token(tokenizer: Any, mask_id: int, folder: Path) -> None:
    """The mask id must be the tokenizer's mask token (declared, or an added special token at that id)."""
    try:
        token = tokenizer.convert_ids_to_tokens(int(mask_id))
    except Exception:  # noqa: BLE001
        token = None
    added = set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    declared = getattr(tokenizer, "mask_token_id", None) == int(mask_id)
    if token is None or int(mask_id) >= len(tokenizer) or not (declared or int(mask_id) in added):
        raise HFModelError(
            f"{folder / 'tokenizer.json'}: the tokenizer has no mask token with id {mask_id} (config.json "
            "mask_token_id); use the tokenizer files published with the checkpoint, which define it")


def generation_eos_ids(folder: Path) -> list[int]:
    """generation_config.json's eos_token_id (an id or a list), [] when the file or field is absent."""
    path = folder / "generation_config.json"
    if not path.is_file():
        return []
    try:
        value = json.loads(path.read_text()).get("eos_token_id")
    except (OSError, ValueError, AttributeError) as exc:
        raise HFModelError(f"{path}: unreadable ({exc}); re-download the checkpoint") from None
    values = value if isinstance(value, list) else [value]
    return [int(v) for v in values if isinstance(v, int) and not isinstance(v, bool)]


def edit_token_ids(config: dict[str, Any]) -> dict[str, Any]:
    """LLaDA 2.2's DELETE / SPLIT ids as config.json states them (None where it does not; the
    `indel-threshold` strategy checks them against the vocabulary)."""
    return {key: config.get(key) for key in ("delete_token_id", "split_token_id")}


def build_native(ckpt: Checkpoint, opts: Any, *, device: str, dtype: Any, name: str) -> Any:
    """`HFDiffusionTextModel` over the native implementation of the checkpoint's family."""
    from parallelbench.models.hf.text_model import HFDiffusionTextModel
    from parallelbench.models.hf.tokenizer import HFChatTokenizer, stop_ids_of
    from parallelbench.models.native import (BLOCK_CAUSAL_FAMILIES, NativeCheckpointError, family_of, load_native,
                                             mask_id_of, read_config)

    folder = local_folder(ckpt, opts.revision)
    try:
        config = read_config(folder)
        family = family_of(config)
        if family is None:
            raise NativeCheckpointError(f"{folder / 'config.json'}: model_type {config.get('model_type')!r} has no "
                                        "native implementation; check that this is a LLaDA, Dream, SDAR / TraDo or "
                                        "LLaDA 2 checkpoint")
        mask_id = mask_id_of(config, family, folder / "config.json", folder)
        tokenizer = load_tokenizer(folder)
        check_mask_token(tokenizer, mask_id, folder)
        block_causal = family in BLOCK_CAUSAL_FAMILIES
        module, config = load_native(folder, device=device, dtype=dtype)
    except NativeCheckpointError as exc:
        raise HFModelError(f"'{name}': {exc}") from None
    stops = stop_ids_of(tokenizer, config, generation_eos_ids(folder))
    if not stops:
        raise HFModelError(f"{folder / 'tokenizer_config.json'}: the tokenizer has no EOS token; "
                           "use the tokenizer files published with the checkpoint")
    vocab = int(config.get("vocab_size"))
    common = dict(mask_id=mask_id, eos_id=stops[0], vocab_size=vocab, stop_ids=stops, pad_id=tokenizer.pad_token_id,
                  cache=opts.cache or "none", source=ckpt.label)
    if block_causal:
        from parallelbench.models.native.block_net import BlockCausalNet

        net = BlockCausalNet(module, compile=bool(opts.compile), **common, **edit_token_ids(config))
    else:
        from parallelbench.models.native.net import NativeDiffusionNet

        delayed = {} if opts.cache != "delayed" else {
            "cache_delay": 2 if opts.cache_delay is None else opts.cache_delay, "refresh_interval": opts.refresh_interval}
        net = NativeDiffusionNet(module, compile=bool(opts.compile), **common, **delayed)
    return HFDiffusionTextModel(net, HFChatTokenizer(tokenizer, stops), name, batch_size=opts.batch_size)
