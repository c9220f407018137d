"""Cost of the tiny network's optional output/input parts per training step.

Times loss + backward of the shipped training configuration on the same batches of the
training stream with the grid exclusion and the rank features switched off one at a time
(the parameters stay; only the forward pass skips the part), so their share of a step can
be told apart from the cost of the task mix.

Usage: python benchmarks/tiny_parts_cost.py [--batches 40] [--threads 2] [--repeats 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--first-step", type=int, default=10, help="training step of the first batch")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args = ap.parse_args()
    if args.quick:
        args.batches, args.repeats, args.threads = 1, 1, 1

    import torch

    torch.set_num_threads(args.threads)
    from parallelbench.models.tiny import load_net
    from parallelbench.models.tiny.data import HeldOutGuard, TrainingStream, collate, training_tasks
    from parallelbench.models.tiny.model import TinyDenoiser
    from parallelbench.models.tiny.train import TrainConfig, masked_diffusion_loss, model_config

    _, tok = load_net()
    cfg, tasks = TrainConfig(), training_tasks()
    if args.quick:  # small chunks of two tasks: the stream is built in a second
        cfg.batch_size, cfg.chunk_per_task, tasks = 8, 8, training_tasks(["waiting_line/copy", "puzzle/latin_square"])
    stream = TrainingStream(tok, tasks, cfg.seed, cfg.batch_size, cfg.chunk_per_task, guard=HeldOutGuard(tasks))
    batches = [collate(stream.batch(s), tok.pad_id) for s in range(args.first_step, args.first_step + args.batches)]
    torch.manual_seed(0)
    net = TinyDenoiser(model_config(cfg, tok))
    exclude, rank = net.grid_exclude, net.rank_proj

    def seconds_per_step() -> float:
        began = time.perf_counter()
        for i, batch in enumerate(batches):
            masked_diffusion_loss(net, batch, torch.Generator().manual_seed(i)).backward()
        return (time.perf_counter() - began) / len(batches)

    seconds_per_step()  # warm-up
    variants = {"both": (exclude, rank), "no_exclusion": (None, rank), "no_rank": (exclude, None)}
    result: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(args.repeats):
        for name, (ex, rp) in variants.items():
            net.grid_exclude, net.rank_proj = ex, rp
            result[name].append(round(seconds_per_step(), 4))
    print(json.dumps({"seconds_per_step": result, "batches": args.batches, "threads": args.threads}, indent=1))


if __name__ == "__main__":
    main()
