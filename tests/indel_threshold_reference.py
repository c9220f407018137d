"""LLaDA 2.2's insert/delete editing written the plain way, one prompt at a time: the reference the
batched `indel-threshold` preset is compared with (tokens, model calls and the repair record).

Written from the algorithm (SGLang's `JointThresholdInDel.step` driven by its `_run_sync` loop, and
the hub decoder's differences as the issue states them), not from their code. Layout as in
block_diffusion_reference: the prompt then masks up to the block boundary after prompt +
gen_length, positions 0.., the block-causal mask, blocks in order from the one holding the
prompt's tail (whose prompt slots are fixed). Each slot of the region is a record that moves with
DELETE / SPLIT: its token, its original-mask mark (the decoder's), and the repair bookkeeping
(first and last token written, whether it is an original mask not filled yet).
"""

from __future__ import annotations

import torch

from block_causal_toy import official_forward
from block_diffusion_reference import _layout


def _best(logits: torch.Tensor, banned: set[int]) -> int:
    z = logits.clone()
    for t in banned:
        z[t] = float("-inf")
    return int(z.argmax())


def _schedule(block_length: int, steps: int) -> list[int]:
    base, extra = divmod(block_length, steps)
    return [base + (1 if s < extra else 0) for s in range(steps)]


def _new_mask(mask_id: int) -> dict:
    return {"tok": mask_id, "first": -1, "last": -1, "open": False, "mark": False}


def indel_generate(net, prompt, *, mask_id, delete_id, split_id, gen_length, block_length, threshold=0.5,
                   edit_threshold=0.0, post_steps=16, min_k=1, steps=None, post_rule="cumulative", eos_id=None):
    """Greedy decode of one prompt; `eos_id` given = stop after the block that holds the first EOS
    (later slots become EOS). Returns the tokens (gen_length), nfe and the repair keys."""
    x, p, total = _layout(prompt, gen_length, block_length, mask_id)
    B = block_length
    # the region after the prompt; "open": an original mask not filled yet (the repair record's)
    slots = [{"tok": mask_id, "first": -1, "last": -1, "open": True} for _ in range(p, total)]
    edits = inserts = deletes = calls = 0
    unmask = None
    specials = {mask_id, delete_id, split_id}
    stop = False

    for blk in range(p // B, total // B):
        lo, hi = blk * B, (blk + 1) * B
        fixed = [lo + j < p for j in range(B)]
        cells = [None if fixed[j] else slots[lo + j - p] for j in range(B)]
        for c in cells:
            if c is not None:
                c["mark"] = c["tok"] == mask_id  # the decoder's original-mask mark (kept when filled)
        post = rounds = 0
        seen: list[list[int]] = []
        history: dict[int, set[int]] = {j: set() for j in range(B)}
        while True:
            x[0, p:hi] = torch.tensor([c["tok"] for c in slots[: hi - p]])
            block = [int(t) for t in x[0, lo:hi]]
            logits = official_forward(net, x[:, :hi], B)[0, lo:hi].float()
            calls += 1
            rounds += 1
            probs = torch.softmax(logits, dim=-1)
            tok = [int(logits[j].argmax()) for j in range(B)]
            conf = [float(probs[j, tok[j]]) for j in range(B)]
            masks = [j for j in range(B) if not fixed[j] and block[j] == mask_id]
            originals = [j for j in masks if cells[j]["mark"]]
            n_new = len(masks) - len(originals)
            if post_rule == "cumulative":
                post += not originals
            else:
                post = 0 if originals else post + 1
            final = (post >= post_steps if post_steps > 0 else not originals) or rounds > B + post_steps
            if not final:
                for j in originals:
                    if tok[j] == mask_id:
                        tok[j] = _best(logits[j], {mask_id})
                        conf[j] = float(probs[j, tok[j]])
            if final:
                m2t = set(masks)
            elif originals:
                k = min_k if steps is None else _schedule(B, steps)[min(rounds - 1, steps - 1)]
                need = min(k + n_new, len(masks))
                high = [j for j in masks if conf[j] > threshold]
                m2t = set(high) if len(high) >= need else set(sorted(masks, key=lambda j: (-conf[j], j))[:need])
            else:
                m2t = set(masks)
            if post_steps == 0 and originals and all(j in m2t for j in originals):
                final, m2t = True, set(masks)
            t2t = {j for j in range(B) if not fixed[j] and block[j] != mask_id and conf[j] > edit_threshold
                   and tok[j] != block[j]}
            writes = sorted(m2t | t2t)
            if writes and final:
                for j in writes:
                    if tok[j] in specials:
                        tok[j] = _best(logits[j], specials)
            elif writes and block in seen:
                changing = [j for j in writes if tok[j] != block[j]]
                if changing:
                    j = min(changing, key=lambda i: (conf[i], i))
                    tok[j] = _best(logits[j], history[j] | ({mask_id} if j in originals else set()))
            seen.append(block)
            for j in writes:
                history[j].add(tok[j])

            # the writes slot by slot ("shown": what the slot shows before this round's edits), then
            # DELETE / SPLIT over the block's editable slots
            sequence = []
            for j in range(B):
                c = cells[j]
                if c is None:
                    continue
                c["shown"] = c["tok"]
                t = tok[j]
                if j not in writes or t == c["tok"]:
                    pass
                elif t == delete_id:
                    deletes += 1
                    continue
                elif t == split_id:
                    inserts += 1
                    sequence.append({**_new_mask(mask_id), "shown": mask_id})
                elif j in m2t:  # a mask filled
                    edits += c["last"] >= 0 and t != c["last"]
                    c["first"] = t if c["first"] < 0 else c["first"]
                    c.update(tok=t, last=t, open=False, shown=t)
                elif t == mask_id:  # a written slot masked again
                    c["tok"] = mask_id
                else:  # a token-to-token edit
                    edits += 1
                    c.update(tok=t, last=t)
                sequence.append(c)
            editable = [j for j in range(B) if cells[j] is not None]
            sequence = sequence[: len(editable)]
            while len(sequence) < len(editable):
                sequence.append({**_new_mask(mask_id), "shown": mask_id})
            for j, c in zip(editable, sequence):
                cells[j] = c
                slots[lo + j - p] = c
            ended = final or not writes
            if ended and eos_id is not None and eos_id in [c["tok"] for c in slots[: hi - p]]:
                stop = True
                for c in slots[hi - p :]:  # the later slots become EOS
                    c.update(tok=eos_id, first=eos_id, last=eos_id, open=False, shown=eos_id)
            if unmask is None and not any(c["open"] for c in slots):
                # a slot masked again shows its last token; a new mask never written, the mask
                unmask = [c["last"] if c.get("shown", c["tok"]) == mask_id and c["last"] >= 0
                          else c.get("shown", c["tok"]) for c in slots]
            for c in slots:
                c.pop("shown", None)
            if ended:
                break
        if stop:
            break
    return {"tokens": [c["tok"] for c in slots][:gen_length], "nfe": calls, "edits": edits, "inserts": inserts,
            "deletes": deletes, "first_tokens": [c["first"] for c in slots][:gen_length],
            "unmask_tokens": unmask[:gen_length]}
