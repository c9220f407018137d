"""Plain reference loops of d3LLM's multi-block decoding, one prompt at a time.

Written for the tests from how hao-ai-lab/d3LLM's routines behave (`generate_multi_block` and
`generate_multi_block_kv_cache` of its LLaDA file, `_sample_multi_block` of its Dream mixin):
a dictionary of block states, one model call per iteration, an iteration counter that is
d3LLM's `nfe`. Deliberately unlike the engine's batched tensors, so that agreement between the
two means something. Two differences from the published routines, on purpose, both after an EOS
(the engine follows the stated semantics, "every slot after the first committed EOS is EOS"):
after the EOS fill the masks are read again (the published loops keep the masks read before the
fill for one more iteration, so slots they just set to EOS can still be committed), and the fill
is applied once more when the loop ends (the published loops stop at their top check without
it, so a last step that commits an earlier EOS leaves other tokens after it).

`routine="llada"`: the lowest-entropy candidate is always committed, others at entropy <= T;
`routine="dream"`: only candidates with entropy < T. Both commit the lowest-entropy mask of the
first fully active block that still has masks when it got nothing.
"""

from __future__ import annotations

import torch


def entropy64(logits: torch.Tensor) -> torch.Tensor:
    p = torch.softmax(logits.double(), dim=-1)
    return -(p * torch.log(p + 1e-12)).sum(dim=-1)


class Blocks:
    """d3LLM's block states: id 0 is the prompt, ids 1.. the generation blocks."""

    def __init__(self, prompt_length: int, gen_length: int, size: int, activate: float):
        size = min(size, gen_length)
        self.size, self.count = size, -(-gen_length // size)  # a shorter last block, as d3LLM's Dream cache loop
        self.p, self.g = prompt_length, gen_length
        self.st = {0: {"start": 0, "end": prompt_length, "masks": 0, "total": prompt_length, "active": True,
                       "done_at": 0, "cached": False}}
        self.next = 1
        self.create(masks=size, active=1.0 >= activate)

    def create(self, masks: int, active: bool, done_at=None, cached=False) -> None:
        start = self.p + (self.next - 1) * self.size
        end = min(start + self.size, self.p + self.g)
        self.st[self.next] = {"start": start, "end": end, "masks": masks, "total": end - start,
                              "active": active, "done_at": done_at, "cached": cached}
        self.next += 1

    def progress(self, bid: int) -> float:
        s = self.st[bid]
        return 1 - s["masks"] / s["total"]


def _early_stop(x, blk: Blocks, eos_id: int, mask_id: int, routine: str, counter: int, cached_variant: bool):
    """The EOS fill at the top of an iteration; (has_eos, first EOS index or None)."""
    gen = x[0, blk.p:]
    hits = (gen == eos_id).nonzero()
    if hits.numel() == 0:
        return False, None
    e = blk.p + int(hits[0, 0])
    x[0, e + 1:] = eos_id
    for bid in sorted(blk.st):
        if bid == 0:
            continue
        s = blk.st[bid]
        if routine == "dream":  # the Dream mixin recounts every block from the canvas
            s["masks"] = int((x[0, s["start"]:s["end"]] == mask_id).sum())
        elif s["start"] > e:
            s["masks"] = 0
        elif s["end"] > e:
            s["masks"] = int((x[0, s["start"]:e + 1] == mask_id).sum())
        if s["masks"] == 0 and (routine == "dream" or s["start"] > e or s["end"] > e):
            s["active"] = True
    while blk.next <= blk.count:
        start = blk.p + (blk.next - 1) * blk.size
        if start <= e:
            break
        blk.create(masks=0, active=True, done_at=counter if cached_variant else None, cached=cached_variant)
    return True, e


def _iteration_starts(x, blk: Blocks, mask_id: int, eos_id: int | None, add: float, activate: float,
                      routine: str, counter: int, cached_variant: bool) -> str:
    """The top of iteration `counter`: "done" (the loop ends before counting it), "filled" (it ends
    at the EOS fill, the iteration counted as d3LLM counts it) or "go" (block updates done)."""
    if int((x[0, blk.p:] == mask_id).sum()) == 0 and blk.next > blk.count:
        return "done"
    has_eos = False
    if eos_id is not None:
        has_eos, _ = _early_stop(x, blk, eos_id, mask_id, routine, counter, cached_variant)
        if has_eos and int((x[0, blk.p:] == mask_id).sum()) == 0:
            return "filled"
    _update_and_add(x, blk, mask_id, add, activate, has_eos)
    return "go"


def _update_and_add(x, blk: Blocks, mask_id: int, add: float, activate: float, has_eos: bool) -> None:
    for bid in sorted(blk.st):
        if bid > 0 and not blk.st[bid]["active"] and blk.progress(bid - 1) >= activate:
            blk.st[bid]["active"] = True
    if blk.next <= blk.count and not has_eos:
        last = max(blk.st)
        if blk.progress(last) >= add or blk.st[last]["masks"] == 0:
            start = blk.p + (blk.next - 1) * blk.size
            masks = int((x[0, start:min(start + blk.size, blk.p + blk.g)] == mask_id).sum())
            blk.create(masks=masks, active=blk.progress(blk.next - 1) >= activate)


def _select(logits, x, blk: Blocks, mask_id: int, threshold: float, routine: str) -> torch.Tensor:
    """The iteration's commits (a [L] bool), d3LLM's selection and forced progress."""
    end = 0
    for bid in sorted(blk.st):
        if blk.st[bid]["active"] or blk.st[bid]["masks"] > 0:
            end = blk.st[bid]["end"]
    cand = x[0] == mask_id
    cand[end:] = False
    ent = torch.full(cand.shape, float("inf"), dtype=torch.float64)
    ent[cand] = entropy64(logits[0][cand].detach())
    transfer = torch.zeros_like(cand)
    if routine == "llada":
        order = sorted(range(cand.numel()), key=lambda i: (float(ent[i]), i))  # ties: the first
        chosen = [i for i in order if bool(cand[i])]
        for k, i in enumerate(chosen):
            transfer[i] = k == 0 or float(ent[i]) <= threshold
    else:
        transfer = cand & (ent < threshold)
    for bid in sorted(blk.st):
        s = blk.st[bid]
        if bid > 0 and s["active"] and s["masks"] > 0:
            if not bool(transfer[s["start"]:s["end"]].any()):
                sub = ent[s["start"]:s["end"]].clone()
                sub[~cand[s["start"]:s["end"]]] = float("inf")
                transfer[s["start"] + int(sub.argmin())] = True
            break
    return transfer


def _commit(x, logits, transfer, blk: Blocks) -> None:
    x[0, transfer] = logits[0, transfer].argmax(dim=-1)
    for bid in sorted(blk.st):
        s = blk.st[bid]
        if bid > 0:
            s["masks"] = max(0, s["masks"] - int(transfer[s["start"]:s["end"]].sum()))


def multi_block(forward, prompt, gen_length: int, *, block_size: int, threshold: float, add: float,
                activate: float, mask_id: int, eos_id: int | None = None, early_stop: bool = False,
                routine: str = "llada") -> tuple[list[int], int, int]:
    """(generated tokens, model calls, d3LLM's iteration counter) without a cache.

    `forward(x [1, L]) -> logits [1, L, V]`: the prediction for every position (Dream: shifted)."""
    p = len(prompt)
    x = torch.tensor([list(prompt) + [mask_id] * gen_length])
    blk = Blocks(p, gen_length, block_size, activate)
    calls = counter = 0
    while True:
        state = _iteration_starts(x, blk, mask_id, eos_id if early_stop else None, add, activate, routine,
                                  counter + 1, cached_variant=False)
        counter += state != "done"
        if state != "go":
            break
        logits = forward(x)
        calls += 1
        _commit(x, logits, _select(logits, x, blk, mask_id, threshold, routine), blk)
    return _final_fill(x[0, p:], eos_id if early_stop else None), calls, counter


def _final_fill(gen: torch.Tensor, eos_id: int | None) -> list[int]:
    hits = (gen == eos_id).nonzero() if eos_id is not None else gen[:0]
    if hits.numel():
        gen = gen.clone()
        gen[int(hits[0, 0]) + 1:] = eos_id
    return gen.tolist()


class _Cache:
    """One prompt's key/value cache of columns [0, length), per layer (concatenated, as d3LLM's)."""

    def __init__(self):
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.length = 0


def multi_block_cached(module, prompt, gen_length: int, *, block_size: int, threshold: float, add: float,
                       activate: float, mask_id: int, cache_delay: int, refresh_interval: int,
                       eos_id: int | None = None, early_stop: bool = False, shift: int = 0,
                       routine: str = "llada", vocab_size: int | None = None) -> tuple[list[int], int, int, list[str]]:
    """(tokens, model calls, iteration counter, the kind of every call) with d3LLM's delayed cache
    (its LLaDA routine's scheduling). `module` is a native `DiffusionTransformer` (raw logits;
    `forward_window` runs a window against given keys/values); `shift` 1 for Dream (logit i read from i - 1; a window's first position repeats
    itself, as d3LLM's Dream loop shifts each window's own logits); `vocab_size` cuts the logits to
    the vocabulary (LLaDA's head may be wider, as `embedding_size`)."""
    p = len(prompt)
    x = torch.tensor([list(prompt) + [mask_id] * gen_length])
    total = x.shape[1]
    blk = Blocks(p, gen_length, block_size, activate)
    cache: _Cache | None = None
    calls = counter = 0
    kinds: list[str] = []

    def run(start: int, keep_until: int, past: _Cache | None):
        """Raw logits of columns [start, L) attending to `past` [0, start); keys of [0, keep_until)."""
        w = module.embed.weight
        shape = (1, module.spec.kv_heads, total, module.spec.head_dim)
        keys = [torch.zeros(shape, dtype=w.dtype) for _ in module.layers]
        values = [torch.zeros(shape, dtype=w.dtype) for _ in module.layers]
        if past is not None and start > 0:
            for i in range(len(keys)):
                keys[i][:, :, :start] = past.keys[i][:, :, :start]
                values[i][:, :, :start] = past.values[i][:, :, :start]
        ids = x[:, start:]
        pos = torch.arange(start, total).unsqueeze(0)
        every = torch.ones_like(ids, dtype=torch.bool)
        # columns [start, L) fresh against the past's [0, start); the buffers keep the fresh keys/values
        raw = module.forward_window(ids, None, pos, keys, values, torch.zeros(1, dtype=torch.long), every, every,
                                    start)[..., :vocab_size]
        fresh = [(k[:, :, start:], v[:, :, start:]) for k, v in zip(keys, values)]
        if shift:
            raw = torch.cat([raw[:, :1], raw[:, :-1]], dim=1)
        logits = torch.full((1, total, raw.shape[-1]), float("-inf"))
        logits[:, start:] = raw
        return logits, fresh

    while True:
        state = _iteration_starts(x, blk, mask_id, eos_id if early_stop else None, add, activate, routine,
                                  counter + 1, cached_variant=True)
        counter += state != "done"
        if state != "go":
            break
        length = cache.length if cache is not None else 0
        newly = []
        for bid in sorted(blk.st):
            s = blk.st[bid]
            if s["end"] <= length:
                continue
            if s["masks"] != 0:
                break
            if s["done_at"] is None:
                s["done_at"] = counter
            delay = counter - s["done_at"]
            if delay >= cache_delay and not s["cached"]:
                newly.append(bid)
                s["cached"] = True
            elif delay < cache_delay:
                break
        update = blk.st[max(newly)]["end"] - length if newly else 0
        stabilizing = any(s["masks"] == 0 and s["done_at"] is not None and not s["cached"] for s in blk.st.values())
        if update > 0:
            logits, fresh = run(length, length + update, cache)
            new = _Cache()
            new.keys = [torch.cat([cache.keys[i][:, :, :length], k[:, :, :update]], 2) if cache else k[:, :, :update]
                        for i, (k, _) in enumerate(fresh)]
            new.values = [torch.cat([cache.values[i][:, :, :length], v[:, :, :update]], 2) if cache else v[:, :, :update]
                          for i, (_, v) in enumerate(fresh)]
            new.length = length + update
            cache = new
            kinds.append("store")
        elif cache is not None and not stabilizing and counter % refresh_interval != 0:
            logits, _ = run(length, length, cache)
            kinds.append("window")
        elif cache is not None:
            logits, fresh = run(0, length, None)
            cache.keys = [k[:, :, :length] for k, _ in fresh]
            cache.values = [v[:, :, :length] for _, v in fresh]
            kinds.append("refresh")
        else:
            logits, _ = run(0, 0, None)
            kinds.append("full")
        calls += 1
        _commit(x, logits, _select(logits, x, blk, mask_id, threshold, routine), blk)
    return _final_fill(x[0, p:], eos_id if early_stop else None), calls, counter, kinds
