"""from_pretrained calls shared by the families, with one-line errors and bf16-on-GPU defaults."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

from parallelbench.models.hf.checkpoint import Checkpoint
from parallelbench.models.hf.errors import HFModelError


def load_tokenizer(ckpt: Checkpoint, *, trust_remote_code: bool, revision: str | None = None) -> Any:
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if ckpt.offline:  # the hub cannot be reached: no retries, the cache only
        kwargs["local_files_only"] = True
    if ckpt.gguf_file:
        kwargs["gguf_file"] = ckpt.gguf_file
    if revision:
        kwargs["revision"] = revision
    try:
        with library_warnings_held():
            return AutoTokenizer.from_pretrained(ckpt.source, **kwargs)
    except Exception as exc:  # noqa: BLE001
        raise HFModelError(f"cannot load the tokenizer of 'hf:{ckpt.label}' ({_short(exc)})") from None


def load_weights(
    ckpt: Checkpoint, auto_class: Any, *, device: str, dtype: Any, trust_remote_code: bool, revision: str | None = None
) -> Any:
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code, "dtype": dtype}
    if ckpt.offline:
        kwargs["local_files_only"] = True
    if ckpt.gguf_file:
        kwargs["gguf_file"] = ckpt.gguf_file
    if revision:
        kwargs["revision"] = revision
    try:
        # a log gets no "Loading weights" bar glued to its next line
        with progress_bars(sys.stderr.isatty()), library_warnings_held():
            model = auto_class.from_pretrained(ckpt.source, **kwargs)
    except Exception as exc:  # noqa: BLE001
        hint = "" if trust_remote_code else "; if the checkpoint ships its own code add --model-opt trust_remote_code=true"
        raise HFModelError(f"cannot load the weights of 'hf:{ckpt.label}' ({_short(exc)}){hint}") from None
    return model.to(device).eval()


@contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """transformers' progress bars on or off for a block (restored after)."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    if not enabled:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if before and not enabled:
            hf_logging.enable_progress_bar()


@contextmanager
def library_warnings_held() -> Iterator[None]:
    """transformers' log lines of a block, printed after it only if it succeeds.

    A failed load ends in one error line; the library's own warnings about it (e.g. "You are using a
    model of type llada to instantiate a model of type ...") would only bury that line.
    """
    import logging

    from transformers.utils import logging as hf_logging

    library = hf_logging.get_logger()
    held: list[logging.LogRecord] = []

    class _Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record)

    saved = library.handlers[:], library.propagate
    library.handlers, library.propagate = [_Hold()], False
    try:
        yield
    finally:
        library.handlers, library.propagate = saved
    for record in held:  # reached only when the block succeeded
        library.handle(record)


def _short(exc: Exception, limit: int = 200) -> str:
    """`Type: message` on one line; a long message ends at a sentence or word, never mid-word."""
    text = " ".join(str(exc).split())
    if len(text) > limit:
        head = text[: limit + 1]
        sentence = head.rfind(". ")
        text = head[: sentence + 1] if sentence >= limit // 2 else head.rsplit(" ", 1)[0] + " ..."
    return f"{type(exc).__name__}: {text}"


def build_remote_dllm(ckpt: Checkpoint, opts: Any, *, net_class: type, default_mask_id: int,
                      device: str, dtype: Any, name: str) -> Any:
    """Load a remote-code dLLM (LLaDA, Dream) and wrap it: the families differ only in their net class."""
    from transformers import AutoModel

    from parallelbench.models.hf.text_model import HFDiffusionTextModel
    from parallelbench.models.hf.tokenizer import HFChatTokenizer, mask_id_of, stop_ids_of

    if opts.compile:
        from parallelbench.models.hf.options import compile_refused

        raise compile_refused(name, "a checkpoint run through its own code (trust_remote_code=true)")
    trust = opts.trust_remote_code is True  # resolved by the package's remote-code policy
    tokenizer = load_tokenizer(ckpt, trust_remote_code=trust, revision=opts.revision)
    model = load_weights(ckpt, AutoModel, device=device, dtype=dtype, trust_remote_code=trust, revision=opts.revision)
    stops = stop_ids_of(tokenizer, ckpt.config)
    vocab = int(ckpt.config.get("vocab_size") or model.get_input_embeddings().weight.shape[0])
    net = net_class(model, mask_id=mask_id_of(ckpt.config, tokenizer, default_mask_id), eos_id=stops[0],
                    vocab_size=vocab, stop_ids=stops, pad_id=tokenizer.pad_token_id, cache=opts.cache or "none")
    return HFDiffusionTextModel(net, HFChatTokenizer(tokenizer, stops), name, batch_size=opts.batch_size)
