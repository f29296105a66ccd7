#!/usr/bin/python3
"""The bench_train workload in PyTorch: Fashion-MNIST MLP 784-256-128-10
(ReLU), Adam 1e-3, cross-entropy from logits, batch 128, data held in memory as
float tensors (scaled to [0, 1]) and shuffled every epoch. Prints one JSON line
per (thread count, repetition) and a summary line per thread count.

Run it with Debian's torch and an optimized BLAS (see docs/benchmarks.md):

  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp OPENBLAS_CORETYPE=$(/usr/bin/python3 bench/pytorch_coretype.py --pick) \
      /usr/bin/python3 bench/pytorch_mlp.py --threads 1,2

Timing matches bench_train: warm-up steps first, then the sum of per-step
times (one step = gather the batch, forward, loss, backward, Adam, read the
loss as a Python float, as Strata reports the loss every step); epoch
boundaries (the reshuffle) are left out.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

DATA_DIR = os.environ.get("STRATA_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def load_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion_mnist(data_dir=DATA_DIR):
    x = load_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz")).reshape(-1, 784)
    y = load_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64))


def make_model():
    return torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))


def blas_info():
    """Which BLAS library is mapped into this process, and OpenBLAS's core type."""
    libs = sorted({line.split()[-1] for line in open("/proc/self/maps")
                   if "blas" in line.rsplit("/", 1)[-1] and ".so" in line})
    core = None
    try:
        import ctypes
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        core = lib.openblas_get_corename().decode()
    except OSError:
        pass
    return {"blas_libs": libs, "openblas_core": core,
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}


def batches(n, batch, generator):
    """Endless (epoch, indices) over shuffled epochs; a partial last batch is kept, as in Strata."""
    epoch = 0
    while True:
        perm = torch.randperm(n, generator=generator)
        for start in range(0, n, batch):
            yield epoch, perm[start:start + batch]
        epoch += 1


def train(x, y, threads, batch, warmup, steps, seed=42):
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model = make_model()
    # foreach: the multi-tensor Adam, PyTorch's fastest on CPU. Its CPU default
    # (PyTorch 1.13) is the per-parameter loop, ~3x slower on the MLP's step.
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    gen = torch.Generator().manual_seed(seed)
    seconds, measured, prev_epoch = 0.0, 0, None
    it = batches(x.shape[0], batch, gen)
    done = 0
    while measured < steps:
        epoch, idx = next(it)
        t0 = time.perf_counter()
        xb, yb = x[idx], y[idx]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        dt = time.perf_counter() - t0
        done += 1
        if done > warmup and epoch == prev_epoch:
            seconds += dt
            measured += 1
        prev_epoch = epoch
    return measured * batch / seconds, seconds, measured


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-flush-denormal", action="store_true",
                    help="leave denormals on (Strata always flushes them)")
    args = ap.parse_args()

    flushed = False if args.no_flush_denormal else torch.set_flush_denormal(True)
    x, y = load_fashion_mnist()
    info = blas_info()
    info.update({"bench": "pytorch_info", "torch": torch.__version__, "flush_denormal": flushed,
                 "python": sys.executable, "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY"),
                 "adam": "foreach",
                 # The allocator the scripts gave it (bench/pytorch_allocator.py).
                 "allocator": os.environ.get("LD_PRELOAD") or os.environ.get("GLIBC_TUNABLES") or "glibc"})
    print(json.dumps(info), flush=True)

    thread_counts = [int(t) for t in args.threads.split(",")]
    results = {t: [] for t in thread_counts}
    for rep in range(1, args.reps + 1):
        for t in thread_counts:
            sps, seconds, measured = train(x, y, t, args.batch, args.warmup, args.steps)
            results[t].append(sps)
            print(json.dumps({"bench": "pytorch_mlp", "threads": t, "batch": args.batch, "steps": measured,
                              "rep": rep, "seconds": seconds, "samples_per_sec": sps}), flush=True)
    for t in thread_counts:
        v = results[t]
        print(json.dumps({"bench": "pytorch_mlp", "summary": True, "threads": t, "batch": args.batch,
                          "reps": len(v), "median_samples_per_sec": statistics.median(v),
                          "min_samples_per_sec": min(v), "max_samples_per_sec": max(v)}), flush=True)


if __name__ == "__main__":
    main()
