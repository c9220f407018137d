"""Speed of the tiny model on this machine: training seconds per step and decoding samples/s.

Reports both wall time and this process's CPU time, because the machine is often shared:
CPU seconds per step times the shipped run's steps is what training costs on an idle core.

Usage: python benchmarks/tiny_speed.py [--steps 20] [--threads 1] [--warmup 0] [--compile] [--quick]

--compile wraps each transformer block in torch.compile(dynamic=True); give it --warmup
steps (untimed) so compiling is not counted as training.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=0, help="untimed steps before the timed ones")
    ap.add_argument("--compile", action="store_true", help="torch.compile each block (dynamic shapes)")
    ap.add_argument("--decode-samples", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args = ap.parse_args()
    if args.quick:
        args.steps, args.warmup, args.decode_samples = 1, 0, 2

    import torch

    torch.set_num_threads(args.threads)
    from parallelbench.decoding import build_strategy
    from parallelbench.models.tiny import load, load_net
    from parallelbench.models.tiny.data import TrainingStream, collate, training_tasks
    from parallelbench.models.tiny.model import TinyDenoiser
    from parallelbench.models.tiny.train import TrainConfig, masked_diffusion_loss, model_config
    from parallelbench.tasks import get_task

    # The shipped run's configuration and data; batches are made before timing starts.
    _, tok = load_net()
    cfg = TrainConfig()
    tasks = training_tasks()
    if args.quick:  # small chunks of two tasks: the stream is built in a second
        cfg.batch_size, cfg.chunk_per_task, tasks = 8, 8, training_tasks(["waiting_line/copy", "puzzle/latin_square"])
    stream = TrainingStream(tok, tasks, cfg.seed, cfg.batch_size, cfg.chunk_per_task)
    batches = [collate(stream.batch(s), tok.pad_id) for s in range(args.warmup + args.steps)]
    net = TinyDenoiser(model_config(cfg, tok))
    if args.compile:
        net.blocks = torch.nn.ModuleList(torch.compile(b, dynamic=True) for b in net.blocks)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(0)

    def step(batch) -> None:
        loss = masked_diffusion_loss(net, batch, gen)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for batch in batches[: args.warmup]:
        step(batch)
    w0, c0 = time.time(), time.process_time()
    for batch in batches[args.warmup :]:
        step(batch)
    wall, cpu = time.time() - w0, time.process_time() - c0

    model = load()
    samples = get_task("waiting_line/copy").samples(args.decode_samples)
    w1, c1 = time.time(), time.process_time()
    gens = model.generate(samples, build_strategy("random", k=1), max_new_tokens=32, seed=0)
    dwall, dcpu = time.time() - w1, time.process_time() - c1
    print(json.dumps({
        "train_steps": args.steps,
        "train_wall_s_per_step": round(wall / args.steps, 3),
        "train_cpu_s_per_step": round(cpu / args.steps, 3),
        "decode_samples": len(gens),
        "decode_wall_samples_per_s": round(len(gens) / dwall, 1),
        "decode_cpu_samples_per_s": round(len(gens) / dcpu, 1),
        "threads": args.threads,
        "warmup_steps": args.warmup,
        "compiled": args.compile,
        "load_average": os.getloadavg(),
    }, indent=1))


if __name__ == "__main__":
    main()
