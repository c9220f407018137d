"""Loop overhead of `parallelbench.decoding.decode` on top of the bare model calls.

For each strategy: decode a batch with a small random transformer, recording the
shape and output of every model call. Then, best of `--repeats`:
- decode:  the full decode with the real model;
- bare:    the same model calls (same batch sizes and lengths) on their own;
- engine:  the full decode against a replay model that hands back the recorded
           logits, i.e. the loop's own work with the model cost removed.
overhead = (decode - bare) / bare, and engine / bare (the same quantity measured
without subtracting two noisy timings; use it on a busy machine). Target: < 10%.

    python benchmarks/bench_engine_overhead.py --batch 32 --gen 32 --threads 1
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from parallelbench.decoding import build_strategy, decode


class SmallTransformer(torch.nn.Module):
    """A random bidirectional transformer with the MaskedDiffusionModel interface."""

    def __init__(self, vocab: int, dim: int, layers: int, max_len: int = 512):
        super().__init__()
        torch.manual_seed(0)
        self.vocab_size, self.mask_id, self.eos_id = vocab, 0, 1
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(max_len, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, vocab)
        self.eval()

    supports_attention_bias = True  # WINO's shadow block (the MaskedDiffusionModel capability)

    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        pos = torch.arange(canvas.shape[1], device=canvas.device) if position_ids is None else position_ids
        if attention_bias is not None:  # [B, L, L] additive, the same for every head
            mask = attention_bias.to(torch.float32).repeat_interleave(self.body.layers[0].self_attn.num_heads, dim=0)
            return self.head(self.body(self.embed(canvas) + self.pos(pos), mask=mask)) * 4.0
        pad = None if attention_mask is None else ~attention_mask
        return self.head(self.body(self.embed(canvas) + self.pos(pos), src_key_padding_mask=pad)) * 4.0


class Recorder:
    """Wraps a model and remembers the batch size and output of every call."""

    def __init__(self, net):
        self.net, self.sizes, self.outputs = net, [], []
        self.mask_id, self.eos_id, self.vocab_size = net.mask_id, net.eos_id, net.vocab_size
        self.device = next(net.parameters()).device
        self.supports_attention_bias = getattr(net, "supports_attention_bias", False)

    def forward(self, canvas, *, attention_mask=None, rows=None, **bias):
        self.sizes.append(canvas.shape[0])
        out = self.net.forward(canvas, attention_mask=attention_mask, rows=rows, **bias)
        self.outputs.append(out)
        return out


class Replay:
    """Hands back recorded logits in order: a model that costs nothing."""

    def __init__(self, rec):
        self.outputs, self.i = rec.outputs, 0
        self.mask_id, self.eos_id, self.vocab_size, self.device = rec.mask_id, rec.eos_id, rec.vocab_size, rec.device
        self.supports_attention_bias = rec.supports_attention_bias

    def forward(self, canvas, *, attention_mask=None, rows=None, **bias):
        out = self.outputs[self.i]
        self.i += 1
        return out


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


@torch.no_grad()
def measure(net, prompts, gen, strategy, repeats, device):
    rec = Recorder(net)
    decode(rec, prompts, gen_length=gen, strategy=strategy)  # warm-up, and the call shapes
    sizes = list(rec.sizes)
    prompt_len = max(len(p) for p in prompts)
    canvas = torch.randint(2, net.vocab_size, (max(sizes), prompt_len + gen), device=device)
    mask = torch.ones_like(canvas, dtype=torch.bool)
    decode_times, bare_times, engine_times = [], [], []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        decode(net, prompts, gen_length=gen, strategy=strategy)
        sync(device)
        decode_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for b in sizes:
            net.forward(canvas[:b], attention_mask=mask[:b])
        sync(device)
        bare_times.append(time.perf_counter() - t0)
        replay = Replay(rec)
        t0 = time.perf_counter()
        decode(replay, prompts, gen_length=gen, strategy=strategy)
        sync(device)
        engine_times.append(time.perf_counter() - t0)
        assert replay.i == len(sizes), "the replayed decode must make the same calls"
    d, b, e = min(decode_times), min(bare_times), min(engine_times)
    return {"calls": len(sizes), "decode_s": d, "bare_s": b, "engine_s": e, "overhead": (d - b) / b, "engine_overhead": e / b}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--strategies",
        default="confidence-topk:k=1,confidence-topk:k=4,random:k=2,confidence-threshold:threshold=0.9,"
        "confidence-factor:factor=1.0,eb:gamma=0.1,klass,dus,slowfast,wino,remdm,rcr",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args = ap.parse_args()
    if args.quick:
        args.batch, args.prompt, args.gen, args.dim, args.layers, args.repeats = 2, 8, 8, 32, 1, 1
        args.strategies = "confidence-topk:k=1,confidence-threshold:threshold=0.9"
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    net = SmallTransformer(args.vocab, args.dim, args.layers).to(device)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(2, args.vocab, (args.prompt,), generator=g).tolist() for _ in range(args.batch)]
    rows = []
    for spec in args.strategies.split(","):
        name, _, rest = spec.partition(":")
        params = {}
        for kv in filter(None, rest.split(";")):
            k, v = kv.split("=")
            params[k] = float(v) if "." in v else int(v)
        out = measure(net, prompts, args.gen, build_strategy(name, **params), args.repeats, device)
        rows.append({"strategy": spec, **out})
        if not args.json:
            print(f"{spec:36s} calls={out['calls']:3d} decode={out['decode_s']*1e3:8.1f} ms "
                  f"bare={out['bare_s']*1e3:8.1f} ms engine={out['engine_s']*1e3:7.1f} ms "
                  f"overhead={100*out['overhead']:6.1f}% engine/bare={100*out['engine_overhead']:5.1f}%")
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
