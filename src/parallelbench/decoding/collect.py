"""Per-row `DecodeResult`s from the batch tensors a decoding loop filled in."""

from __future__ import annotations

import gc
from typing import Any

import torch

from parallelbench.decoding.result import DecodeResult


def collect(*args):
    """Per-row results; the cyclic GC is paused while thousands of small lists are built
    (it would otherwise rescan them over and over for no garbage)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _collect_rows(*args)
    finally:
        if was_enabled:
            gc.enable()


def to_host(tensors: list[torch.Tensor]) -> list[Any]:
    """Each tensor as nested Python lists (what `.tolist()` gives), copied to the host with one
    transfer per dtype: the first waits for the device once (the decode is over by then)."""
    out: list[Any] = [None] * len(tensors)
    groups: dict[torch.dtype, list[int]] = {}
    for i, t in enumerate(tensors):
        groups.setdefault(t.dtype, []).append(i)
    for idx in groups.values():
        flat = torch.cat([tensors[i] if tensors[i].dim() == 1 else tensors[i].reshape(-1) for i in idx]).cpu().tolist()
        at = 0
        for i in idx:
            n = tensors[i].numel()
            out[i] = _nest(flat[at:at + n], tuple(tensors[i].shape))
            at += n
    return out


def _nest(flat: list, shape: tuple[int, ...]) -> Any:
    if len(shape) <= 1:
        return flat if shape else flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _counted(tps_chunks: list[tuple[torch.Tensor, ...]]) -> list[tuple[torch.Tensor, ...]]:
    """The chunks with each step's net count per row: the block-causal loop's plain steps hand their
    commits as [rows, slots] bool (no sum in every step), counted here in one go."""
    at = [i for i, chunk in enumerate(tps_chunks) if chunk[-1].dim() == 2]
    if not at:
        return tps_chunks
    nets = [tps_chunks[i][-1] for i in at]
    counts = torch.cat(nets).sum(dim=1).split([n.shape[0] for n in nets])
    out = list(tps_chunks)
    for i, n in zip(at, counts):
        out[i] = (*out[i][:-1], n)
    return out


def _collect_rows(out_tokens, out_order, out_nfe, out_remasks, out_extra, tps_chunks, history, return_history):
    """Per-row results from the batch tensors; row i took part in nfe[i] steps. `out_extra` holds
    [n_rows] tensors (a number per row) and [n_rows, gen_length] ones (a list of ids per row, e.g.
    the repair record's unmask_tokens / first_tokens); each row's `extra` gets its item or list.
    The tensors may live on the model's device: they reach the host together (`to_host`)."""
    n_rows = out_tokens.shape[0]
    keys = list(out_extra)
    tps_chunks = _counted(tps_chunks)
    chunk_parts = [t for chunk in tps_chunks for t in chunk]
    hist_parts = [t for pair in history for t in pair] if return_history else []
    host = to_host([out_tokens, out_order, out_nfe, out_remasks, *(out_extra[k] for k in keys), *chunk_parts,
                    *hist_parts])
    out_tokens, out_order, out_nfe, out_remasks = host[:4]
    extras_host = host[4:4 + len(keys)]
    chunks = host[4 + len(keys):4 + len(keys) + len(chunk_parts)]
    hist_host = host[4 + len(keys) + len(chunk_parts):]
    nfe = out_nfe
    tps_rows: list[list[int]] = [[0] * n for n in nfe]
    at = 0
    for t, chunk in enumerate(tps_chunks):
        if len(chunk) == 2:  # (rows, net) of global step t: every row still decoding took part
            for r, n in zip(chunks[at], chunks[at + 1]):
                if t < nfe[r]:
                    tps_rows[r][t] = int(n)
        else:  # (rows, each row's own step index, net): rows may sit out steps (block-causal)
            for r, step, n in zip(chunks[at], chunks[at + 1], chunks[at + 2]):
                if step < nfe[r]:
                    tps_rows[r][step] = int(n)
        at += len(chunk)
    hist_rows: list[list[list[int]]] | None = None
    if return_history:
        hist_rows = [[] for _ in range(n_rows)]
        for rows, snap in zip(hist_host[0::2], hist_host[1::2]):
            for r, line in zip(rows, snap):
                hist_rows[r].append(line)
    tokens, order = out_tokens, out_order
    committed = [sum(1 for x in row if x >= 0) for row in order]
    remasks = out_remasks
    extras = dict(zip(keys, extras_host))
    results = []
    for i in range(n_rows):
        extra: dict[str, Any] = {k: v[i] for k, v in extras.items()} if extras else {}
        if remasks[i]:
            extra["remasked"] = remasks[i]
        results.append(
            DecodeResult(
                tokens=tokens[i],
                nfe=nfe[i],
                tokens_per_step=tps_rows[i],
                order=order[i],
                num_committed=committed[i],
                history=hist_rows[i] if hist_rows is not None else None,
                extra=extra,
            )
        )
    return results
