"""The edit-threshold rule written the plain way (a full softmax everywhere), and a small random
mixer net whose predictions shift as the canvas fills, so edits happen: the reference the
preset's gathered, bounded fast path is compared with."""

from __future__ import annotations

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.schedules.edit_threshold import EditThreshold
from parallelbench.decoding.view import Decision


class PlainEditThreshold(EditThreshold):
    def step(self, view):
        o = self.options
        commit = selection.threshold(view.decision_confidence, view.candidates, o.threshold, view.confidence)
        probs = torch.softmax(view.logits.float(), -1)
        p_now = probs.gather(-1, view.canvas.unsqueeze(-1)).squeeze(-1)
        proposals = probs.clone()
        proposals[..., view.mask_id] = -1.0
        p_top, best = proposals.max(-1)
        quantity = p_top - p_now if o.edit_rule == "gain" else p_top
        edit = view.committed & view.in_block & (best != view.canvas) & (quantity > o.edit_threshold)
        return Decision(commit=commit, edit=edit, tokens=torch.where(edit, best, view.x0))


class MixerNet(torch.nn.Module):
    """Random bidirectional mixer: every position also sees the canvas mean."""

    mask_id, eos_id = 0, 1

    def __init__(self, vocab: int, seed: int, scale: float):
        super().__init__()
        torch.manual_seed(seed)
        self.vocab_size, self.scale = vocab, scale
        self.embed = torch.nn.Embedding(vocab, 32)
        self.mix = torch.nn.Linear(32, 32)
        self.head = torch.nn.Linear(32, vocab)

    def forward(self, canvas, *, attention_mask=None, rows=None):
        x = self.embed(canvas)
        x = x + 3.0 * torch.tanh(self.mix(x.mean(dim=1, keepdim=True)))
        return self.head(x) * self.scale
