#!/usr/bin/python3
"""The mirrored bench_train workload in PyTorch DDP: Fashion-MNIST MLP
784-256-128-10, Adam 1e-3, global batch 128 split over N processes (64 each
for 2), gloo backend on this machine, 1 thread per process. Rank 0 prints one
JSON line per repetition and a summary line with global samples/s.

  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp OPENBLAS_CORETYPE=$(/usr/bin/python3 bench/pytorch_coretype.py --pick) \
      /usr/bin/python3 bench/pytorch_ddp.py --procs 2

--allreduce also measures gloo's all-reduce of 1 MB and 25 MB of floats
between the processes (algbw, busbw = algbw * 2(n-1)/n), for comparison with
bench_allreduce.

Every process draws the same permutation each epoch and takes its own slice
of each global batch, as Strata's distributed dataset does. Timing on rank 0
as in pytorch_mlp.py: per-step times after warm-up, epoch boundaries left out;
every step ends in DDP's gradient all-reduce, which keeps the ranks in step.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_mlp import blas_info, load_fashion_mnist, make_model  # noqa: E402


def train(rank, world, x, y, global_batch, warmup, steps, seed=42):
    torch.manual_seed(seed)
    model = torch.nn.parallel.DistributedDataParallel(make_model())
    # foreach: the multi-tensor Adam, PyTorch's fastest on CPU. Its CPU default
    # (PyTorch 1.13) is the per-parameter loop, ~3x slower on the MLP's step.
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    gen = torch.Generator().manual_seed(seed)  # same on every rank
    n = x.shape[0]
    seconds, measured, done, epoch = 0.0, 0, 0, 0
    dist.barrier()
    while measured < steps:
        perm = torch.randperm(n, generator=gen)
        for b, start in enumerate(range(0, n, global_batch)):
            idx = torch.tensor_split(perm[start:start + global_batch], world)[rank]
            t0 = time.perf_counter()
            xb, yb = x[idx], y[idx]
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # DDP all-reduces (averages) the gradients here
            opt.step()
            loss.item()
            dt = time.perf_counter() - t0
            done += 1
            if done > warmup and b > 0:
                seconds += dt
                measured += 1
            # Every rank stops after the same step: the count is the same everywhere.
            if measured >= steps:
                break
        epoch += 1
    # Report the slowest rank's time: the job is as fast as it.
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return measured * global_batch / t.item(), t.item(), measured


def allreduce_bw(world, nbytes, min_seconds=0.2):
    buf = torch.ones(nbytes // 4, dtype=torch.float32)
    dist.all_reduce(buf)
    # Check: every element is the sum of world ones.
    if not bool((buf == world).all()):
        raise RuntimeError("gloo all-reduce gave a wrong result")
    dist.barrier()
    iters, t0 = 0, time.perf_counter()
    while True:
        for _ in range(4):
            buf.fill_(1.0)  # keep values bounded; ~1 memset per all-reduce, small next to it
            dist.all_reduce(buf)
        iters += 4
        elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.broadcast(elapsed, 0)  # rank 0 decides when to stop
        if elapsed.item() >= min_seconds:
            break
    algbw = nbytes * iters / elapsed.item() / 1e9
    return algbw, algbw * 2 * (world - 1) / world, iters


def worker(rank, world, port, args, out_q):
    torch.set_num_threads(args.threads)
    flushed = torch.set_flush_denormal(True)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    x, y = load_fashion_mnist()
    lines = []
    if rank == 0:
        info = blas_info()
        info.update({"bench": "pytorch_info", "torch": torch.__version__, "flush_denormal": flushed,
                     "backend": "gloo", "procs": world, "threads_per_proc": args.threads})
        lines.append(info)
    rates = []
    for rep in range(1, args.reps + 1):
        sps, seconds, measured = train(rank, world, x, y, args.batch, args.warmup, args.steps)
        rates.append(sps)
        if rank == 0:
            lines.append({"bench": "pytorch_ddp", "procs": world, "threads_per_proc": args.threads,
                          "global_batch": args.batch, "steps": measured, "rep": rep, "seconds": seconds,
                          "samples_per_sec": sps})
    if rank == 0:
        lines.append({"bench": "pytorch_ddp", "summary": True, "procs": world, "threads_per_proc": args.threads,
                      "global_batch": args.batch, "reps": len(rates),
                      "median_samples_per_sec": statistics.median(rates),
                      "min_samples_per_sec": min(rates), "max_samples_per_sec": max(rates)})
    if args.allreduce:
        for nbytes in (1_000_000, 25_000_000):
            vals = [allreduce_bw(world, nbytes) for _ in range(args.reps)]
            if rank == 0:
                alg = [v[0] for v in vals]
                lines.append({"bench": "gloo_allreduce", "procs": world, "bytes": nbytes, "check": "ok",
                              "algbw_gbps": statistics.median(alg),
                              "busbw_gbps": statistics.median(alg) * 2 * (world - 1) / world,
                              "algbw_min": min(alg), "algbw_max": max(alg), "reps": args.reps})
    if rank == 0:
        out_q.put(lines)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per process")
    ap.add_argument("--batch", type=int, default=128, help="global batch")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--allreduce", action="store_true", help="also measure gloo all-reduce bandwidth")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    mp.spawn(worker, args=(args.procs, free_port(), args, q), nprocs=args.procs, join=True)
    for line in q.get():
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
