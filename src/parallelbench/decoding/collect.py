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


def _collect_rows(out_tokens, out_order, out_nfe, out_remasks, out_extra, tps_chunks, history, return_history):
    """Per-row results from the batch tensors; row i took part in nfe[i] steps. `out_extra` holds
    [n_rows] tensors (a number per row) and [n_rows, gen_length] ones (a list of ids per row, e.g.
    the repair record's unmask_tokens / first_tokens); each row's `extra` gets its item or list."""
    n_rows = out_tokens.shape[0]
    tps = torch.zeros((n_rows, max(len(tps_chunks), 1)), dtype=torch.long)
    for t, chunk in enumerate(tps_chunks):
        if len(chunk) == 2:  # (rows, net) of global step t: every row still decoding took part
            rows, net = chunk
            tps[rows.cpu(), t] = net.cpu()
        else:  # (rows, each row's own step index, net): rows may sit out steps (block-causal)
            rows, steps, net = chunk
            tps[rows.cpu(), steps.cpu()] = net.cpu()
    nfe = out_nfe.tolist()
    tps_rows = [row[:n] for row, n in zip(tps.tolist(), nfe)]
    hist_rows: list[list[list[int]]] | None = None
    if return_history:
        hist_rows = [[] for _ in range(n_rows)]
        for rows, snap in history:
            for r, line in zip(rows.tolist(), snap.tolist()):
                hist_rows[r].append(line)
    tokens, order = out_tokens.tolist(), out_order.tolist()
    committed = (out_order >= 0).sum(dim=1).tolist()
    remasks = out_remasks.tolist()
    extras = {k: v.tolist() for k, v in out_extra.items()}
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
